"""The synthetic tokenizer vLLM's server needs where no model hub is reachable: word i is "t<i>", so any
prompt of N random token ids decodes to text that encodes back to the same N ids; and the server's model
folder (the in-process engine's config.json plus that tokenizer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from accelbench.config import paths
from accelbench.config.params import Resolved
from accelbench.measure.engines.common import write_model_dir


def token_word(token_id: int) -> str:
    return f"t{token_id}"


def write_tokenizer(model_dir: Path, vocab_size: int, model_max_length: int) -> dict[str, Any]:
    """Write tokenizer.json + tokenizer_config.json: word i is "t<i>", whitespace split, nothing added.

    Any sequence of ids in [0, vocab_size) decodes to space-joined words that encode back to the same ids,
    so a prompt of N ids is N tokens on both sides of the HTTP API. Returns what the manifest records.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers

    # unknown words (never produced by decoding our ids) map to id 0 rather than to an id past the vocab
    tok = Tokenizer(models.WordLevel({token_word(i): i for i in range(vocab_size)}, unk_token=token_word(0)))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    model_dir = Path(model_dir)
    tok.save(str(model_dir / "tokenizer.json"))
    # an explicit class: AutoTokenizer would otherwise pick LlamaTokenizerFast from config.json, which adds BOS
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": model_max_length,
              "clean_up_tokenization_spaces": False, "add_bos_token": False, "add_eos_token": False}
    (model_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return {"synthetic": True, "type": "WordLevel (tokenizers) as PreTrainedTokenizerFast",
            "vocab_size": vocab_size, "words": f"{token_word(0)}..{token_word(vocab_size - 1)}",
            "pre_tokenizer": "WhitespaceSplit", "special_tokens_added": 0, "unk_token": token_word(0),
            "files": ["tokenizer.json", "tokenizer_config.json"]}


def serve_model_dir(resolved: Resolved, outputs_dir: Path) -> tuple[Path, dict[str, Any]]:
    """A model folder for the server: the same config.json the in-process engine reads, plus a tokenizer."""
    model_dir = write_model_dir(resolved, Path(paths.model_cache_dir(outputs_dir)).parent / "serve-models")
    info = write_tokenizer(model_dir, resolved.model.vocab_size, resolved.scenario.engine.max_model_len)
    return model_dir, info

