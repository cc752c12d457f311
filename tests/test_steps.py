"""Engine-step figures per level, from hand-made scheduler samples."""

import numpy as np
import pandas as pd
import pytest

from accelbench.analysis import steps


def test_level_steps_split_prefill_from_decode_only_steps():
    # steps end at 0.00 (before the level), 0.01 (decode), 0.05 (prefill finished: 40 ms), 0.06, 0.07 (decodes)
    s = pd.DataFrame(dict(t=[0.0, 0.01, 0.05, 0.06, 0.07], prompt_tokens=[0, 0, 512, 0, 0],
                          generation_tokens=[4, 4, 5, 5, 5], running=[4, 4, 5, 5, 5]))
    row = steps.level_steps(s, 0.0, 0.07)
    assert row["steps"] == 4 and row["prefill_steps_pct"] == 25
    assert row["prefill_step_mean_ms"] == pytest.approx(40) and row["decode_step_mean_ms"] == pytest.approx(10)
    assert row["running_in_prefill_steps_mean"] == 5
    assert np.isnan(steps.level_steps(s, 1.0, 2.0)["prefill_step_mean_ms"])
