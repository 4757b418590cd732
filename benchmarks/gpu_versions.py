"""The packages a GPU check runs with, against pyproject's requirements.

    python benchmarks/gpu_versions.py

Prints the version of each package craft imports at run time and whether it satisfies
pyproject's requirement (torch's pin is the CPU install's: a GPU machine brings its own).
Exits 1 if one that the GPU path needs cannot be imported (peft and tensorboard included:
LoRA stages and `track tensorboard` need them at run time), 0 otherwise; a version below
pyproject's bound is printed as such, not fatal.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
# Distribution name -> module the run imports.
NEEDED = {"torch": "torch", "transformers": "transformers", "accelerate": "accelerate", "tokenizers": "tokenizers",
          "trl": "trl", "datasets": "datasets", "peft": "peft", "tensorboard": "tensorboard", "lark": "lark",
          "pydantic": "pydantic", "duckdb": "duckdb", "sqlglot": "sqlglot", "jinja2": "jinja2", "rich": "rich",
          "pandas": "pandas", "pyarrow": "pyarrow", "numpy": "numpy", "matplotlib": "matplotlib", "pyyaml": "yaml",
          "psutil": "psutil", "huggingface_hub": "huggingface_hub"}


def main() -> int:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = {Requirement(d).name.lower().replace("-", "_"): Requirement(d) for d in deps}
    missing = []
    print(f"python {sys.version.split()[0]}")
    for dist, module in NEEDED.items():
        try:
            importlib.import_module(module)
            version = metadata.version(dist)
        except (ImportError, metadata.PackageNotFoundError) as exc:
            missing.append(dist)
            print(f"  {dist:16} MISSING ({exc})")
            continue
        req = wanted.get(dist.lower().replace("-", "_"))
        if req is None or dist == "torch":
            fit = "" if req is None else f"(pyproject pins {req.specifier} for the CPU install)"
        else:
            fit = f"{req.specifier}: " + ("ok" if req.specifier.contains(version, prereleases=True) else "BELOW/OUTSIDE")
        print(f"  {dist:16} {version:14} {fit}")
    try:
        import torch
        print(f"  cuda: {torch.cuda.is_available()}"
              + (f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""))
    except ImportError:
        pass
    if missing:
        print(f"gpu_versions: cannot import {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
