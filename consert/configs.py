"""Config plumbing every command shares: the one-line :class:`ConfigError`, fields with their help text,
YAML files read strictly (duplicate keys and malformed YAML named at their line), ``key=value`` overrides read
as YAML, dataclasses filled from mappings with every value type-checked before anything runs, and the resolved
settings files the workflow hands its jobs (:class:`ResolvedFile`)."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Hashable
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A configuration file or value is invalid; says which file/key and what was expected."""


def key(help_text: str, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING) -> Any:
    """A config field with its one help text (``consert train --list-keys`` and the docs show it)."""
    return field(default=default, default_factory=factory, metadata={"help": help_text})


def key_rows(config_class: type, values: Any = None) -> list[tuple[str, Any, str]]:
    """Each key of a config dataclass: its name, its value in ``values`` (else its default; ``required`` when it has
    none) and its one help text. The docs' tables and the commands' ``--help`` show these rows."""
    rows = []
    for item in dataclasses.fields(config_class):
        if values is not None:
            value = getattr(values, item.name)
        elif item.default is not dataclasses.MISSING:
            value = item.default
        elif item.default_factory is not dataclasses.MISSING:
            value = item.default_factory()
        else:
            value = "required"
        rows.append((item.name, value, item.metadata["help"]))
    return rows


def keys_epilog(config_class: type, title: str) -> str:
    """A ``--help`` epilog listing the keys of a config dataclass, each with its default and help text."""
    lines = [f"{title}:"] + [f"  {name:22} {value!s:12} {text}" for name, value, text in key_rows(config_class)]
    return "\n".join(lines)


def dataclass_from_dict(cls: type, values: dict[str, Any], source: str = "config") -> Any:
    """Instantiate config dataclass ``cls`` from a mapping: unknown keys and bad numbers are ConfigErrors."""
    fields = {f.name: str(f.type) for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(unknown_key_message(unknown[0], sorted(fields), source))
    values = {key: _coerce(key, value, fields[key], source) for key, value in values.items()}
    try:
        return cls(**values)
    except TypeError as err:
        raise ConfigError(f"{source}: {err}") from None


def unknown_key_message(key: str, known: list[str], where: str, what: str = "key") -> str:
    """``<where>: unknown key `foo` (did you mean `bar`?); known keys: ...`` in one line (``what``: another noun
    than key, such as method)."""
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    return f"{where}: unknown {what} `{key}`{hint}; known {what}s: {', '.join(known)}"


def _coerce(key: str, value: Any, annotation: str, source: str) -> Any:
    """Check ``value`` against the field's type before anything runs; read numbers that YAML 1.1
    leaves as strings (``5e-7``). A quoted ``"false"`` is not a bool and ``1.9`` is not an int."""
    kinds = [kind.strip() for kind in annotation.split("|")]
    base = kinds[0]

    def fail(expected: str) -> ConfigError:
        return ConfigError(f"{source}: {key}: expected {expected}, got {value!r} ({type(value).__name__})")

    if value is None:
        if "None" in kinds:
            return None
        raise fail(f"a value of type {base} (null is not allowed)")
    if base == "bool":
        if not isinstance(value, bool):
            raise fail("true or false (unquoted)")
        return value
    if base in ("int", "float"):
        if isinstance(value, str):
            try:
                value = float(value) if base == "float" else int(value)
            except ValueError:
                raise fail("a number") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail("an integer" if base == "int" else "a number")
        if base == "int" and not isinstance(value, int):
            raise fail("an integer")
        return float(value) if base == "float" else value
    if base == "str" and not isinstance(value, str):
        raise fail("a string")
    if base.startswith(("tuple", "list")) and not isinstance(value, list | tuple):
        raise fail("a list")
    if base.startswith("dict") and not isinstance(value, dict):
        raise fail("a mapping")
    return value


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that rejects duplicate keys instead of silently keeping the last one."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # a list or mapping as a key: SafeLoader's own "found unhashable key", with its line
            if key in seen:
                raise ConfigError(f"{self.name}:{key_node.start_mark.line + 1}: duplicate key {key!r}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def yaml_fault(err: yaml.YAMLError, text: str = "") -> tuple[int | None, str]:
    """A YAML error as ``(line, what)`` for a one-line message: PyYAML's own text spans several lines (the
    context, the problem, each with its position and a caret). ``line`` (1-based) is the problem's; the context,
    when it began on another line, says where. A character YAML does not allow is placed by its offset in
    ``text``, the document read."""
    if isinstance(err, yaml.reader.ReaderError):
        code = err.character if isinstance(err.character, int) else ord(err.character)
        line = text.count("\n", 0, err.position) + 1 if text else None
        return line, f"character #x{code:04x}: {err.reason}"
    if not isinstance(err, yaml.MarkedYAMLError):
        return None, " ".join(str(err).split())
    mark = err.problem_mark or err.context_mark
    context = err.context or ""
    if context and err.context_mark and mark and err.context_mark.line != mark.line:
        context += f" (from line {err.context_mark.line + 1})"
    what = ", ".join(part for part in (context, err.problem) if part) or "malformed"
    return (mark.line + 1 if mark else None), what


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, rejecting duplicate keys and malformed YAML with file:line errors."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte {raw[err.start]:#04x}); expected a YAML file") from None
    try:
        loader = _UniqueKeyLoader(text)
        loader.name = str(path)
        try:
            values = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        line, problem = yaml_fault(err, text)
        raise ConfigError(f"{path}{f':{line}' if line else ''}: not valid YAML: {problem}") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: expected a mapping of keys to values at the top level")
    return values


def parse_overrides(pairs: list[str], flag: str = "--set") -> dict[str, Any]:
    """Turn ``["key=value", ...]`` into a dict, reading each value as YAML (``lr=1e-5``, ``views=[a, b]``); a key
    given twice is refused, naming both values (the last one would otherwise win silently)."""
    values: dict[str, Any] = {}
    given: dict[str, str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{flag} {pair!r}: expected key=value")
        if key in given:
            raise ConfigError(f"{flag} {key}: given twice ({given[key]}, {pair}); expected each key once")
        given[key] = pair
        try:
            values[key] = yaml.safe_load(raw)
        except yaml.YAMLError as err:
            raise ConfigError(f"{flag} {pair!r}: the value is not valid YAML ({yaml_fault(err)[1]})") from None
    return values


class ResolvedFile:
    """A settings dataclass the workflow resolves from its config and hands its jobs as one YAML file, every key
    present (``results/*_config.yaml``), which the job's command reads back: BERT-flow's settings, the
    encoding's, the comparison's."""

    @classmethod
    def read(cls, path: str | Path):
        """The settings in a YAML file; a wrong key or value is a one-line :class:`ConfigError`."""
        return dataclass_from_dict(cls, read_yaml(path), source=str(path))

    def to_yaml(self) -> str:
        """Every setting as YAML (what :meth:`read` reads back)."""
        return yaml.safe_dump(dataclasses.asdict(self), sort_keys=False, allow_unicode=True)
