"""PSL program files: PSL 2.4 JSON configurations and PSL 2.0-2.3 ``.psl`` + ``.data`` files.

**JSON (PSL 2.4).** One file with ``rules`` (a list of rule strings, or the path of a ``.psl`` file),
``predicates`` (keys ``"Name/arity"``; each with ``observations``, ``targets``, ``truth`` as a list of
data files, a list of atoms written inline (``[["Anna", "Bob"], ["Bob", "Cy", 0.5]]``) or a dict of
splits ``{"learn": [...], "infer": [...]}``, optional ``types`` and ``evaluations``) and ``options``.
``#`` and ``//`` start comments (outside strings); paths are relative to the file. A predicate
with ``targets`` is open, any other closed.

**.data (PSL 2.0-2.3).** A small YAML file: ``predicates:`` (``Name/arity: open|closed``, or a list
``[- open|closed, - types: [...], - block]``), then ``observations:``, ``targets:``, ``truth:`` mapping
predicate names to a path or a list of paths, relative to the ``.data`` file.

**Options.** PSL's ADMM options map onto :func:`tractable.hlmrf.solve`: ``admmreasoner.maxiterations``
-> ``max_iter``, ``admmreasoner.epsilonabs`` -> ``eps_abs``, ``admmreasoner.epsilonrel`` ->
``eps_rel``, ``admmreasoner.stepsize`` -> ``rho``, ``reasoner.tolerance`` -> ``gap_tol`` (PSL stops
when the objective changes less than this; here the certified relative gap must fall below it). Every
other option is reported: a :class:`UserWarning` and :attr:`Model.ignored_options`.
"""

from __future__ import annotations

import json
import os
import re
import warnings

from .parser import strip_comments

__all__ = ["OPTION_MAP", "model_from_data_file", "model_from_json", "read_json", "read_data_file"]

#: PSL option -> (solve option, converter)
OPTION_MAP = {
    "admmreasoner.maxiterations": ("max_iter", int),
    "admmreasoner.epsilonabs": ("eps_abs", float),
    "admmreasoner.epsilonrel": ("eps_rel", float),
    "admmreasoner.stepsize": ("rho", float),
    "reasoner.tolerance": ("gap_tol", float),
}
_KEY = re.compile(r"^([A-Za-z$_][A-Za-z0-9$_]*)/(\d+)$")


def read_text(path) -> str:
    """The text of a UTF-8 file; a file that is not UTF-8 is a ``ValueError`` naming it."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a UTF-8 text file (byte {err.start}: {err.reason}).") from None


def read_json(path) -> dict:
    """Read a PSL JSON configuration (with comment lines) into a dict.

    Raises
    ------
    OSError
        The file cannot be read.
    ValueError
        Not valid JSON after removing comments (with the line and column), or not an object.
    """
    path = os.fspath(path)
    text = read_text(path)
    try:
        cfg = json.loads(strip_comments(text, quotes='"'))
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{path}: not a PSL JSON configuration: {err.msg} at line {err.lineno} column {err.colno}."
        ) from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: a PSL JSON configuration is an object with rules, predicates, options.")
    unknown = sorted(set(cfg) - {"rules", "predicates", "options", "infer", "learn"})
    if unknown:
        raise ValueError(f"{path}: unknown top-level key {unknown[0]!r} (expected rules, predicates, options).")
    return cfg


def _sources(value, split: str, where: str, base: str, arity: int) -> list:
    """Data sources of one partition: paths (relative to ``base``) or inline rows as one data frame."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"learn", "infer"})
        if unknown:
            raise ValueError(f"{where}: unknown split {unknown[0]!r} (PSL's splits are learn and infer).")
        value = value.get(split, [])
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [os.path.join(base, v) for v in value]
    if isinstance(value, list) and all(isinstance(v, list) for v in value):
        return [_inline(value, where, arity)]
    raise ValueError(
        f"{where}: expected a list of data file paths, a list of atoms (lists of arguments and an optional "
        f"value) or a dict of splits; got {value!r}."
    )


def _inline(rows: list, where: str, arity: int):
    """Atoms written in the JSON (``[["Anna", "Bob"], ...]`` or with a value last) as a data frame."""
    import pandas as pd

    args, values = [], []
    for k, row in enumerate(rows):
        if len(row) not in (arity, arity + 1):
            raise ValueError(f"{where}: atom {k} {row!r} must have {arity} arguments and optionally a value.")
        if any(isinstance(a, (list, dict)) or a is None for a in row[:arity]):
            raise ValueError(f"{where}: atom {k} {row!r} has an argument that is not a string or a number.")
        args.append([str(a) for a in row[:arity]])
        v = row[arity] if len(row) == arity + 1 else 1.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise ValueError(f"{where}: atom {k} {row!r} has the value {v!r}; values are numbers in [0, 1].")
        values.append(float(v))
    frame = pd.DataFrame(args, columns=list(range(arity))) if args else pd.DataFrame(columns=list(range(arity)))
    frame[arity] = values
    return frame


def _options(model, options: dict, where: str) -> None:
    if not isinstance(options, dict):
        raise ValueError(f"{where}: `options` must be an object; got {options!r}.")
    from .learning import LEARNING_PREFIXES

    ignored = []
    for key, value in options.items():
        k = str(key).lower()
        if k == "runtime.learn":
            model.learn_requested = value is True or str(value).strip().lower() == "true"
        elif k == "runtime.learn.method":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{where}: option {key!r} must name a learner; got {value!r}.")
            model.learn_method = value.strip()
        elif k.startswith(LEARNING_PREFIXES):
            model.learn_options[str(key)] = value
        elif k in OPTION_MAP:
            name, conv = OPTION_MAP[k]
            try:
                model.solve_options[name] = conv(value)
            except (TypeError, ValueError):
                raise ValueError(f"{where}: option {key!r} must be a number; got {value!r}.") from None
        else:
            ignored.append(str(key))
    model.ignored_options = ignored
    if ignored:
        warnings.warn(
            f"PSL options without meaning here (ignored): {', '.join(ignored)}; honoured: {', '.join(OPTION_MAP)}.",
            UserWarning,
            stacklevel=4,
        )


def model_from_json(cls, path, *, split: str = "infer", database=None, strict: bool = False):
    """Build a :class:`~tractable.psl.Model` from a PSL 2.4 JSON configuration (see the module docstring)."""
    if split not in ("learn", "infer"):
        raise ValueError(f"`split` must be 'learn' or 'infer'; got {split!r}.")
    path = os.fspath(path)
    cfg = read_json(path)
    base = os.path.dirname(os.path.abspath(path))
    model = cls(database=database, strict=strict)
    preds = cfg.get("predicates", {})
    if not isinstance(preds, dict) or not preds:
        raise ValueError(f"{path}: `predicates` must be a non-empty object with keys 'Name/arity'.")
    for key, spec in preds.items():
        m = _KEY.match(key)
        if m is None:
            raise ValueError(f"{path}: predicate key {key!r} must be 'Name/arity', e.g. 'Friends/2'.")
        if not isinstance(spec, dict):
            raise ValueError(f"{path}: predicate {key!r} must map to an object; got {spec!r}.")
        unknown = sorted(set(spec) - {"observations", "targets", "truth", "types", "evaluations", "options"})
        if unknown:
            raise ValueError(
                f"{path}: predicate {key!r} has the unknown key {unknown[0]!r} "
                "(expected observations, targets, truth, types, evaluations)."
            )
        model.add_predicate(m.group(1), int(m.group(2)), closed="targets" not in spec)
        for part in ("observations", "targets", "truth"):
            for src in _sources(spec.get(part, []), split, f"{path}: {key} {part}", base, int(m.group(2))):
                model.add_data(m.group(1), part, src)
        if "evaluations" in spec:
            model.evaluators[f"{m.group(1)}/{m.group(2)}"] = list(spec["evaluations"])
    rules = cfg.get("rules", [])
    if isinstance(rules, str):
        model.add_rules(os.path.join(base, rules))
    elif isinstance(rules, list) and all(isinstance(r, str) for r in rules):
        for r in rules:
            try:
                model.add_rule(r)
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from None
    else:
        raise ValueError(f"{path}: `rules` must be a list of rule strings or the path of a .psl file.")
    _options(model, cfg.get("options", {}), path)
    return model


# ---------------------------------------------------------------------------------------------- .data (YAML)
def _yaml(text: str, path: str):
    """Parse the YAML subset of PSL's ``.data`` files: nested mappings, lists and scalars."""
    lines = []
    for number, raw in enumerate(text.split("\n"), start=1):
        body = raw.split("#", 1)[0].rstrip()
        if body.strip():
            if "\t" in body[: len(body) - len(body.lstrip())]:
                raise ValueError(f"{path}, line {number}: indent with spaces, not tabs.")
            lines.append((len(body) - len(body.lstrip()), body.strip(), number))

    def block(i: int, indent: int):
        if i >= len(lines):
            return None, i
        if lines[i][1].startswith("- ") or lines[i][1] == "-":
            out = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("-"):
                item = lines[i][1][1:].strip()
                num = lines[i][2]
                i += 1
                if item.endswith(":") and ":" not in item[:-1]:
                    child, i = block(i, lines[i][0]) if i < len(lines) and lines[i][0] > indent else (None, i)
                    out.append({item[:-1].strip(): child})
                elif item:
                    out.append(_scalar(item))
                else:
                    raise ValueError(f"{path}, line {num}: an empty list item.")
            return out, i
        out = {}
        while i < len(lines) and lines[i][0] == indent:
            text, num = lines[i][1], lines[i][2]
            if text.startswith("-"):
                raise ValueError(f"{path}, line {num}: a list item among mapping keys.")
            if ":" not in text:
                raise ValueError(f"{path}, line {num}: expected 'key: value'; got {text!r}.")
            key, _, value = text.partition(":")
            key, value = key.strip(), value.strip()
            i += 1
            if value:
                val = _scalar(value)
            elif i < len(lines) and lines[i][0] > indent:
                val, i = block(i, lines[i][0])
            else:
                val = None
            if key in out:
                prev = out[key] if isinstance(out[key], list) else [out[key]]
                val = prev + (val if isinstance(val, list) else [val])
            out[key] = val
        if i < len(lines) and lines[i][0] > indent:
            raise ValueError(f"{path}, line {lines[i][2]}: unexpected indentation.")
        return out, i

    if not lines:
        raise ValueError(f"{path}: an empty .data file.")
    result, i = block(0, lines[0][0])
    if i != len(lines):
        raise ValueError(f"{path}, line {lines[i][2]}: unexpected indentation.")
    return result


def _scalar(s: str):
    s = s.strip()
    if s.startswith("[") and s.endswith("]"):
        return [_scalar(x) for x in s[1:-1].split(",") if x.strip()]
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


def read_data_file(path) -> dict:
    """Read a PSL 2.0-2.3 ``.data`` file.

    Returns
    -------
    dict
        ``predicates`` (``"Name/arity"`` -> ``{"closed": bool}``) and ``observations``, ``targets``,
        ``truth`` (predicate name -> list of absolute paths).
    """
    path = os.fspath(path)
    doc = _yaml(read_text(path), path)
    if not isinstance(doc, dict) or "predicates" not in doc:
        raise ValueError(f"{path}: a .data file starts with a `predicates:` section.")
    unknown = sorted(set(doc) - {"predicates", "observations", "targets", "truth"})
    if unknown:
        raise ValueError(f"{path}: unknown section {unknown[0]!r} (expected predicates, observations, targets, truth).")
    base = os.path.dirname(os.path.abspath(path))
    preds = {}
    for key, spec in (doc["predicates"] or {}).items():
        if _KEY.match(key) is None:
            raise ValueError(f"{path}: predicate {key!r} must be 'Name/arity'.")
        flags = spec if isinstance(spec, list) else [spec]
        words = [f for f in flags if isinstance(f, str)]
        if ("open" in words) == ("closed" in words):
            raise ValueError(f"{path}: predicate {key} must be declared either open or closed; got {spec!r}.")
        preds[key] = {"closed": "closed" in words}
    out = {"predicates": preds}
    for part in ("observations", "targets", "truth"):
        section = doc.get(part) or {}
        if not isinstance(section, dict):
            raise ValueError(f"{path}: `{part}` must map predicate names to data files.")
        out[part] = {
            name: [os.path.join(base, str(p)) for p in (paths if isinstance(paths, list) else [paths])]
            for name, paths in section.items()
        }
    return out


def model_from_data_file(cls, psl_path, data_path, *, database=None, strict: bool = False):
    """Build a :class:`~tractable.psl.Model` from a ``.psl`` rule file and a ``.data`` file."""
    spec = read_data_file(data_path)
    model = cls(database=database, strict=strict)
    for key, p in spec["predicates"].items():
        name, arity = key.split("/")
        model.add_predicate(name, int(arity), closed=p["closed"])
    for part in ("observations", "targets", "truth"):
        for name, paths in spec[part].items():
            for p in paths:
                try:
                    model.add_data(name, part, p)
                except ValueError as err:
                    raise ValueError(f"{os.fspath(data_path)}: {err}") from None
    model.add_rules(psl_path)
    return model
