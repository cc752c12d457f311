"""The one exception type for errors a user can cause (bad names, bad params, missing hardware)."""


class AccelbenchError(Exception):
    """A problem the user can fix; the message names the file, field or value and what is valid."""

    def _render_traceback_(self) -> list[str]:
        # IPython (and so papermill) shows this instead of a traceback: the message is the whole story
        return [f"AccelbenchError: {self}"]
