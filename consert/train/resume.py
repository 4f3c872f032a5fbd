"""A training stage's resumable checkpoint: a preempted, requeued or killed run goes on from its last one.

Every ``checkpoint_every`` (steps, ``"500"``, or minutes, ``"15min"``) the loop writes, atomically, one file beside
the stage's output folder (``<output_dir>.resume.pt``: not inside it, since a workflow removes a failed job's
outputs), marked as the harness's (:data:`MARKER`) and keyed by what the stage's run depends on (its resolved
config, the data's sha256, the training precision). It holds the step, the model's and heads' states, the
optimizer's, schedule's and gradient scaler's, the random generators' (torch's CPU and CUDA ones, Python's, NumPy's),
the best checkpoint so far, the patience count and the log; the data order is the seed's (:func:`consert.train.loop
.batches`), so the position is the step. A run that finds a checkpoint of its own key resumes from it, and ends as
the unbroken run would, bit for bit on the same machine; one of another key is not read (a line says so) and is
replaced. The export removes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

#: What marks a checkpoint as the harness's (and its layout's version).
MARKER = "consert resumable checkpoint 1"
#: ``checkpoint_every``'s forms: a step count, minutes, or off.
EVERY = re.compile(r"^(?:(?P<steps>[1-9]\d*)|(?P<minutes>\d+(?:\.\d+)?)min|off)$")


def check_every(value: str) -> str:
    """``value`` if it is a ``checkpoint_every`` (``"500"``, ``"15min"``, ``"off"``), else a one-line ValueError."""
    if not EVERY.match(value) or value in ("0min", "0.0min"):
        raise ValueError(f"expected a step count (500), minutes (15min) or off, got {value!r}")
    return value


def checkpoint_path(output_dir: str | os.PathLike) -> Path:
    """Where a stage exporting to ``output_dir`` keeps its resumable checkpoint: beside the folder, not in it."""
    folder = Path(output_dir)
    return folder.with_name(f"{folder.name}.resume.pt")


@dataclass
class Checkpointing:
    """When and where one stage writes its checkpoint, and what of it the loop does not own (``modules``: the model
    and the heads, by name)."""

    path: Path
    key: str
    every: str
    modules: dict[str, nn.Module]
    last_saved: float = 0.0

    @classmethod
    def of_stage(cls, output_dir: str | os.PathLike, every: str, modules: dict[str, nn.Module], *keyed: Any):
        """The checkpointing of a stage exporting to ``output_dir``, keyed by ``keyed`` (JSON-serialisable)."""
        key = hashlib.sha256(json.dumps(keyed, sort_keys=True, default=str).encode()).hexdigest()
        return cls(checkpoint_path(output_dir), key, check_every(every), modules, time.monotonic())

    def due(self, step: int) -> bool:
        """Whether a checkpoint is due after ``step``."""
        found = EVERY.match(self.every)
        if found["steps"]:
            return step % int(found["steps"]) == 0
        if found["minutes"]:
            return time.monotonic() - self.last_saved >= float(found["minutes"]) * 60
        return False

    def save(self, step: int, loop_state: dict[str, Any]) -> None:
        """Write the checkpoint after ``step`` (``loop_state``: the optimisation's, the dev selection's, the log,
        the seconds elapsed), atomically: a kill mid-write leaves the previous one."""
        state = {
            "marker": MARKER,
            "key": self.key,
            "step": step,
            "modules": {name: module.state_dict() for name, module in self.modules.items()},
            "random": _random_states(),
            **loop_state,
        }
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        torch.save(state, temporary)
        os.replace(temporary, self.path)
        self.last_saved = time.monotonic()

    def load(self) -> dict[str, Any] | None:
        """The checkpoint of this stage's key, its modules and random generators restored; None where there is
        none, or one of another run (said in one line: it will be replaced)."""
        if not self.path.is_file():
            return None
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)  # tensors and plain data only
        except Exception as error:  # noqa: BLE001 - a truncated, foreign or pickling file: started over, said
            print(f"consert train: {self.path}: not a readable checkpoint ({error}); starting over", file=sys.stderr)
            return None
        if not isinstance(state, dict) or state.get("marker") != MARKER:
            print(f"consert train: {self.path} is not a checkpoint of the harness; starting over", file=sys.stderr)
            return None
        if state.get("key") != self.key:
            print(
                f"consert train: {self.path} is another run's checkpoint (another config, data or precision); "
                "starting over",
                file=sys.stderr,
            )
            return None
        for name, module in self.modules.items():
            module.load_state_dict(state["modules"][name])
        _set_random_states(state["random"])
        print(f"consert train: resuming from step {state['step']} ({self.path})", file=sys.stderr)
        return state

    def remove(self) -> None:
        """Remove the checkpoint (once the stage has exported)."""
        self.path.unlink(missing_ok=True)


def _random_states() -> dict[str, Any]:
    """The random generators' states as tensors and plain numbers (what ``torch.load(weights_only=True)`` reads)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else []
    version, python, gauss = random.getstate()
    kind, keys, position, has_gauss, cached = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": cuda,
        "python": [version, torch.tensor(python, dtype=torch.int64), gauss],
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached],
    }


def _set_random_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    if states["cuda"]:
        torch.cuda.set_rng_state_all(states["cuda"])
    version, python, gauss = states["python"]
    random.setstate((version, tuple(python.tolist()), gauss))
    kind, keys, position, has_gauss, cached = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), position, has_gauss, cached))
