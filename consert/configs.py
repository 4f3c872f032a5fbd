"""Config plumbing every command shares: the one-line :class:`ConfigError`, fields with their help text,
YAML files read strictly (duplicate keys and malformed YAML named at their line), ``key=value`` overrides read
as YAML, where each key was given (:class:`KeyOrigins`: a file's line or a flag, which a fault names), the one way a
settings class is declared and checked (:class:`Settings`, pydantic, as the workflow config is), the switches YAML
1.1 reads as booleans (:data:`OnOff`), and the resolved settings files the workflow hands its jobs
(:class:`ResolvedFile`)."""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Self, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


class ConfigError(ValueError):
    """A configuration file or value is invalid; says which file/key and what was expected."""


def key(help_text: str, default: Any = PydanticUndefined, factory: Any = None, **bounds: float) -> Any:
    """A settings field with its one help text (``--help``, ``consert train --list-keys`` and the docs show it) and,
    where only this key has them, its bounds (``gt``, ``ge``, ``lt``: pydantic's; a bound several keys share is a
    type, such as ``consert.configs.AtLeastOne``); no default and no factory: a key the class's own validator
    fills (a training stage's) or a required one."""
    if factory is not None:
        return Field(default_factory=factory, description=help_text, **bounds)
    return Field(default, description=help_text, **bounds)


def _switch(value: Any) -> Any:
    """``on``/``off`` as given, and YAML 1.1's reading of them (``packed: on`` is ``True``; so are ``true`` and
    ``yes``): a boolean as ``"on"``/``"off"``, so that every resolved config and record writes the same string."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):  # a quoted boolean, or --config's text
        return "on" if value.strip().lower() == "true" else "off"
    return value


#: A number above zero.
Positive = Annotated[float, Field(gt=0)]
#: A contrastive loss's temperature, declared once (checked > 0 wherever a config gives one): the training config's
#: (ConSERT's, the family's), SG-OPT's tau and Figure 7's sweep.
Temperature = Positive
AtLeastOne = Annotated[int, Field(ge=1)]
#: A share of positions, dimensions or steps.
Ratio = Annotated[float, Field(ge=0, lt=1)]
#: A switch: ``on`` or ``off`` (``true``/``false``, and YAML's ``on``/``off`` read as booleans, normalised to them).
OnOff = Annotated[Literal["on", "off"], BeforeValidator(_switch)]
#: A switch with an ``auto`` position (the harness decides from the run): ``auto``, ``on`` or ``off``, as :data:`OnOff`.
AutoOnOff = Annotated[Literal["auto", "on", "off"], BeforeValidator(_switch)]


@dataclass(frozen=True)
class KeyOrigins:
    """Where each key of a settings mapping was given, by its path of keys (``("packed",)``, ``("augcse", "x")``): a
    file's line (``train.yaml:12``) or a flag (``--set``); a key not listed came from ``default``. A fault names the
    origin of its key, not the file that the other keys came from."""

    default: str
    keys: Mapping[tuple[str, ...], str] = field(default_factory=dict)

    def of(self, path: Sequence[str]) -> str:
        """The origin of the key at ``path``: its own, else the nearest enclosing key's, else :attr:`default`."""
        for end in range(len(path), 0, -1):
            if (found := self.keys.get(tuple(path[:end]))) is not None:
                return found
        return self.default


#: What a field's type expects, in a fault's words, by pydantic's error type.
_EXPECTED = {
    "float_parsing": "a number",
    "float_type": "a number",
    "int_parsing": "an integer",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false (unquoted)",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
}


class Settings(BaseModel):
    """A settings class of the harness, declared as the workflow config is (pydantic; each key with its default
    and help text, :func:`key`): unknown keys refused, no key reassigned once built, every value checked when it
    is built. Read from a mapping (:meth:`from_dict`), a fault is one :class:`ConfigError` line naming the key,
    what it holds and what was expected: a boolean key takes ``true``/``false`` only, and a number is never a
    boolean; a number YAML 1.1 leaves as a string (``5e-7``) is read as the number. A class's own checks
    (``model_validator(mode="after")``) raise :class:`ConfigError` with their own line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _booleans_exactly(cls, values: Any) -> Any:
        """A boolean key takes a boolean, and no other key does (pydantic reads ``1`` as true, true as 1)."""
        if not isinstance(values, dict):
            return values
        for name, value in values.items():
            field = cls.model_fields.get(name)
            if field is None or value is None:
                continue
            kinds = _plain_types(field.annotation)
            if (kinds == {bool}) != isinstance(value, bool) and kinds & {bool, int, float}:
                kind = "bool" if bool in kinds else "int" if int in kinds else "float"
                expected = _EXPECTED[f"{kind}_type"]
                raise _TypeFault(name, f"expected {expected}, got {value!r} ({type(value).__name__})")
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str | KeyOrigins = "config") -> Self:
        """Build from a mapping; a wrong key or value is one :class:`ConfigError` line naming where it was given
        (``source``: one name for every key, or each key's :class:`KeyOrigins`)."""
        try:
            return cls.model_validate(values)
        except ValidationError as err:
            raise ConfigError(fault_line(err, cls, source)) from None

    def replace(self, **changes: Any) -> Self:
        """A checked copy with ``changes`` applied."""
        return type(self).from_dict({**self.model_dump(), **changes}, source=type(self).__name__)


class _TypeFault(ConfigError):
    """A value of the wrong type (a check before pydantic's own) of the key ``key``: its line is prefixed with where
    that key was given."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key


def _plain_types(annotation: Any) -> set[Any]:
    """The types a field's annotation admits besides null, each bounded type (``Annotated``) as its base type:
    ``AtLeastOne | None`` is ``{int}``."""
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    return {get_args(m)[0] if get_origin(m) is Annotated else m for m in members} - {type(None)}


def fault_line(err: ValidationError, cls: type[BaseModel], source: str | KeyOrigins) -> str:
    """The first fault of a settings class's validation as one line, opening with where its key was given
    (``source``'s origin of it): a check's own :class:`ConfigError` as it is, an unknown key with the known ones (and
    a "did you mean"), a wrong type with what was expected."""
    first = err.errors()[0]
    loc = [str(part) for part in first["loc"]]
    origins = source if isinstance(source, KeyOrigins) else KeyOrigins(source)
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, _TypeFault):
        return f"{origins.of([*loc, cause.key])}: {'.'.join([*loc, str(cause)])}"
    if isinstance(cause, ConfigError):  # a check's own line, "KEY: ...": where that key was given, where known
        named = tuple(str(cause).split(":", 1)[0].split("."))
        known = next((named[:end] for end in range(len(named), 0, -1) if named[:end] in origins.keys), None)
        return f"{origins.keys[known]}: {cause}" if known else str(cause)
    source = origins.of(loc)
    owner = cls
    for part in loc[:-1]:  # the settings class that holds the faulty key (a sub-config's)
        inner = owner.model_fields[part].annotation if part in owner.model_fields else None
        owner = inner if isinstance(inner, type) and issubclass(inner, BaseModel) else owner
    where = ": ".join([source, ".".join(loc[:-1])]) if len(loc) > 1 else source
    name, value = ".".join(loc), first.get("input")
    if first["type"] == "extra_forbidden":
        return unknown_key_message(loc[-1], sorted(owner.model_fields), where)
    if first["type"] == "missing":
        return f"{source}: {name}: required, not given"
    if first["type"] == "model_type":
        inner = owner.model_fields[loc[-1]].annotation
        return f"{source}: {name}: expected a mapping of {', '.join(inner.model_fields)}, got {value!r}"
    if cause is not None:
        return f"{source}: {name}: {cause}"
    if first["type"] == "literal_error":
        return f"{source}: {name}: expected one of {first['ctx']['expected']}, got {value!r}"
    if first["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return f"{source}: {name}: expected {_bounds_text(owner.model_fields[loc[-1]])}, got {value!r}"
    expected = _EXPECTED.get(first["type"], first["msg"].lower().removeprefix("input should be "))
    return f"{source}: {name}: expected {expected}, got {value!r} ({type(value).__name__})"


def _bounds_text(field: FieldInfo) -> str:
    """What a bounded field takes, in words: a ratio in [0, 1), a positive number or integer, at least n; "or null"
    where it may be null."""
    bounds: dict[str, Any] = {}

    def collect(metadata: Any) -> None:
        for item in metadata:
            collect(getattr(item, "metadata", ()))  # a Field(...) inside Annotated holds its constraints
            bounds.update({k: getattr(item, k) for k in ("gt", "ge", "lt") if getattr(item, k, None) is not None})

    collect(field.metadata)
    for member in get_args(field.annotation):  # a bounded type in a union (``AtLeastOne | None``)
        collect(getattr(member, "__metadata__", ()))
    if bounds == {"ge": 0, "lt": 1}:
        text = "a ratio in [0, 1)"
    elif bounds.get("gt") == 0:
        text = "a positive number"
    elif bounds.get("ge") == 1:
        text = "a positive integer"
    else:
        text = " and ".join(f"{dict(gt='above', ge='at least', lt='below')[k]} {v}" for k, v in bounds.items())
    return f"{text} or null" if type(None) in get_args(field.annotation) else text


def key_rows(config_class: type[BaseModel], values: Any = None) -> list[tuple[str, Any, str]]:
    """Each key of a settings class: its name, its value in ``values`` (else its default; ``required`` when it has
    none) and its one help text. The docs' tables and the commands' ``--help`` show these rows."""
    rows = []
    for name, item in config_class.model_fields.items():
        if values is not None:
            value = getattr(values, name)
        elif not item.is_required():
            value = item.get_default(call_default_factory=True)
        else:
            value = "required"
        rows.append((name, value, item.description))
    return rows


def keys_epilog(config_class: type[BaseModel], title: str) -> str:
    """A ``--help`` epilog listing the keys of a settings class, each with its default and help text."""
    lines = [f"{title}:"] + [f"  {name:22} {value!s:12} {text}" for name, value, text in key_rows(config_class)]
    return "\n".join(lines)


def unknown_key_message(key: str, known: list[str], where: str, what: str = "key") -> str:
    """``<where>: unknown key `foo` (did you mean `bar`?); known keys: ...`` in one line (``what``: another noun
    than key, such as method)."""
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    return f"{where}: unknown {what} `{key}`{hint}; known {what}s: {', '.join(known)}"


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
    return _read_yaml(path)[0]


def read_yaml_origins(path: str | Path) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """:func:`read_yaml`'s mapping and where each of its keys is, ``{("a", "b"): "FILE:LINE"}`` for ``a: {b: ...}``,
    from the YAML's own marks (what :class:`KeyOrigins` takes)."""
    values, text = _read_yaml(path)
    lines: dict[tuple[str, ...], str] = {}

    def walk(node: yaml.Node, above: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    lines[(*above, key_node.value)] = f"{path}:{key_node.start_mark.line + 1}"
                    walk(value_node, (*above, key_node.value))

    if text.strip():
        walk(yaml.compose(text, Loader=yaml.SafeLoader), ())
    return values, lines


class NotUtf8Error(ValueError):
    """A file that is not UTF-8: the line (from 1) and the byte offset of the first undecodable byte, and its value."""

    def __init__(self, line: int, offset: int, byte: int):
        super().__init__(f"line {line}: not UTF-8 text (byte {offset:,})")
        self.line, self.offset, self.byte = line, offset, byte


def read_utf8(path: str | Path) -> str:
    """A file's text decoded as UTF-8; a byte that is not is a :class:`NotUtf8Error` naming its line."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise NotUtf8Error(raw.count(b"\n", 0, err.start) + 1, err.start, raw[err.start]) from None


def _read_yaml(path: str | Path) -> tuple[dict[str, Any], str]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        text = read_utf8(path)
    except NotUtf8Error as err:
        raise ConfigError(f"{path}:{err.line}: not UTF-8 text (byte {err.byte:#04x}); expected a YAML file") from None
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
        return {}, text
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: expected a mapping of keys to values at the top level")
    return values, text


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


def read_settings(
    cls: type[Settings], path: str | Path | None, overrides: list[str], flag: str = "--set", pop: Sequence[str] = ()
) -> tuple[Settings, dict[str, Any]]:
    """``cls`` from a YAML file (optional) with ``key=value`` overrides (``flag``'s) on top; a fault names where its
    key was given: the file and its line, or ``flag``. ``pop`` names keys taken out before ``cls`` sees them,
    returned beside it (``{key: value}``, the absent ones left out)."""
    values, keys = read_yaml_origins(path) if path else ({}, {})
    given = parse_overrides(overrides, flag)
    values.update(given)
    origins = KeyOrigins(str(path) if path else flag, {**keys, **{(key,): flag for key in given}})
    taken = {key: values.pop(key) for key in pop if key in values}
    return cls.from_dict(values, source=origins), taken


class ResolvedFile(Settings):
    """A settings class the workflow resolves from its config and hands its jobs as one YAML file, every key
    present (``results/*_config.yaml``), which the job's command reads back: BERT-flow's settings, the
    encoding's, the comparison's."""

    @classmethod
    def read(cls, path: str | Path) -> Self:
        """The settings in a YAML file; a wrong key or value is a one-line :class:`ConfigError`."""
        return cls.from_dict(read_yaml(path), source=str(path))

    def to_yaml(self) -> str:
        """Every setting as YAML (what :meth:`read` reads back)."""
        return yaml.safe_dump(self.model_dump(), sort_keys=False, allow_unicode=True)
