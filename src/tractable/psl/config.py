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
when the objective changes less than this; here the certified relative gap must fall below it).
``random.seed`` seeds weight learning's random draws (:attr:`Model.learn_seed`); weight learning's own
options (``runtime.learn*``, ``gradientdescent.*``, ...) go to :meth:`Model.learn`. Every
other option is reported: a :class:`UserWarning` and :attr:`Model.ignored_options`. Option values are
type-checked: an integer option takes an integer (or a string of one), a number option a finite number
(or a string of one); ``true``, ``1.9`` for an iteration count or ``1e309`` are errors.

**Limits.** Lists and objects of a JSON program, and blocks and ``[...]`` lists of a ``.data`` file,
nest at most :data:`MAX_NESTING` deep; a predicate has at most :data:`~tractable.psl.model.MAX_ARITY`
arguments.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings

import numpy as np

from .parser import strip_comments

__all__ = ["MAX_NESTING", "OPTION_MAP", "model_from_data_file", "model_from_json", "read_json", "read_data_file"]

#: the deepest nesting of lists/objects in a JSON program and of blocks/``[...]`` lists in a .data file
MAX_NESTING = 64


def _option_int(value, minimum: int = 1) -> int:
    """An integer option: an int, an integral float or a string of one; never a bool."""
    v = value.strip() if isinstance(value, str) else value
    if isinstance(v, str):
        try:
            v = int(v)
        except ValueError:
            v = float(v)  # "1e4"; a ValueError for anything else
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        raise ValueError
    if v < minimum:
        raise ValueError
    return int(v)


def _option_float(value, positive: bool) -> float:
    """A number option: a finite int or float, or a string of one; never a bool."""
    v = value.strip() if isinstance(value, str) else value
    if isinstance(v, str):
        v = float(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError
    v = float(v)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise ValueError
    return v


#: PSL option -> (solve option, converter, what the value must be)
OPTION_MAP = {
    "admmreasoner.maxiterations": ("max_iter", _option_int, "an integer >= 1"),
    "admmreasoner.epsilonabs": ("eps_abs", lambda v: _option_float(v, False), "a finite number >= 0"),
    "admmreasoner.epsilonrel": ("eps_rel", lambda v: _option_float(v, False), "a finite number >= 0"),
    "admmreasoner.stepsize": ("rho", lambda v: _option_float(v, True), "a finite number > 0"),
    "reasoner.tolerance": ("gap_tol", lambda v: _option_float(v, True), "a finite number > 0"),
}
_KEY = re.compile(r"([A-Za-z$_][A-Za-z0-9$_]*)/([0-9]+)")  # fullmatch; ASCII digits only
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _short(value) -> str:
    """A value for an error message: its repr, at most EXCERPT_CHARS characters."""
    from .data import short_repr

    return short_repr(value)


def _arity(key: str, digits: str, where: str) -> int:
    """The arity of a predicate key ``Name/digits``, at most MAX_ARITY (checked before converting)."""
    from .model import MAX_ARITY

    digits = digits.lstrip("0") or "0"
    if len(digits) > len(str(MAX_ARITY)) or int(digits) > MAX_ARITY:
        raise ValueError(
            f"{where}: predicate {_short(key)} has more than MAX_ARITY = {MAX_ARITY} arguments "
            f"(arity {digits if len(digits) <= 20 else digits[:20] + '...'})."
        )
    return int(digits)


def _depth(brackets: str, opening: str) -> int:
    """The deepest nesting of a string of brackets (``opening`` ones count +1, the others -1)."""
    if not brackets:
        return 0
    b = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    up = np.isin(b, np.frombuffer(opening.encode("ascii"), dtype=np.uint8))
    return int(np.cumsum(np.where(up, 1, -1)).max())


def _json_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings of a JSON text (comments already removed)."""
    return _depth(_NOT_BRACKET.sub("", _JSON_STRING.sub("", text)), "[{")


_RULE_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_NOT_PAREN = re.compile(r"[^\[\]()]+")


def rule_depth(text: str) -> int:
    """The deepest nesting of ``(`` and ``[`` outside quoted constants of rule text (comments removed)."""
    return _depth(_NOT_PAREN.sub("", _RULE_STRING.sub("", text)), "([")


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
    text = strip_comments(read_text(path), quotes='"')
    depth = _json_depth(text)
    if depth > MAX_NESTING:
        raise ValueError(
            f"{path}: lists and objects nested {depth} deep; a PSL JSON configuration nests at most "
            f"MAX_NESTING = {MAX_NESTING} deep."
        )

    def constant(name: str):
        raise ValueError(f"{name} is not a JSON number")

    try:
        cfg = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{path}: not a PSL JSON configuration: {err.msg} at line {err.lineno} column {err.colno}."
        ) from None
    except (ValueError, RecursionError) as err:  # NaN / Infinity, a number too long to convert
        raise ValueError(f"{path}: not a PSL JSON configuration: {str(err).split(';')[0]}.") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: a PSL JSON configuration is an object with rules, predicates, options.")
    unknown = sorted(set(cfg) - {"rules", "predicates", "options", "infer", "learn"})
    if unknown:
        raise ValueError(f"{path}: unknown top-level key {_short(unknown[0])} (expected rules, predicates, options).")
    return cfg


def _sources(value, split: str, where: str, base: str, arity: int) -> list:
    """Data sources of one partition: paths (relative to ``base``) or inline rows as one data frame."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"learn", "infer"})
        if unknown:
            raise ValueError(f"{where}: unknown split {_short(unknown[0])} (PSL's splits are learn and infer).")
        value = value.get(split, [])
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [os.path.join(base, v) for v in value]
    if isinstance(value, list) and all(isinstance(v, list) for v in value):
        return [_inline(value, where, arity)]
    raise ValueError(
        f"{where}: expected a list of data file paths, a list of atoms (lists of arguments and an optional "
        f"value) or a dict of splits; got {_short(value)}."
    )


def _evaluations(value, where: str) -> list:
    """A predicate's ``evaluations``: a list of evaluator names or ``{"evaluator": name, "options": {...}}``
    objects; a single name or object stands for a list of one."""
    from .evaluation import EVALUATORS

    items = [value] if isinstance(value, (str, dict)) else value
    if not isinstance(items, list) or not items:
        raise ValueError(f"{where}: `evaluations` must be a list of evaluator names or objects; got {_short(value)}.")
    for e in items:
        name = e.get("evaluator") if isinstance(e, dict) else e
        if not isinstance(name, str) or name.rsplit(".", 1)[-1] not in EVALUATORS:
            raise ValueError(
                f"{where}: `evaluations` entry {_short(e)} must name a PSL evaluator "
                f'({", ".join(EVALUATORS)}), alone or as {{"evaluator": name, "options": {{...}}}}.'
            )
        if isinstance(e, dict) and not isinstance(e.get("options", {}) or {}, dict):
            raise ValueError(f"{where}: the `options` of evaluator {_short(name)} must be an object.")
    return list(items)


def _inline(rows: list, where: str, arity: int):
    """Atoms written in the JSON (``[["Anna", "Bob"], ...]`` or with a value last) as a data frame."""
    import pandas as pd

    args, values = [], []
    for k, row in enumerate(rows):
        if len(row) not in (arity, arity + 1):
            raise ValueError(f"{where}: atom {k} {_short(row)} must have {arity} arguments and optionally a value.")
        if any(isinstance(a, (list, dict)) or a is None for a in row[:arity]):
            raise ValueError(f"{where}: atom {k} {_short(row)} has an argument that is not a string or a number.")
        args.append([str(a) for a in row[:arity]])
        v = row[arity] if len(row) == arity + 1 else 1.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise ValueError(
                f"{where}: atom {k} {_short(row)} has the value {_short(v)}; values are numbers in [0, 1]."
            )
        values.append(float(v))
    frame = pd.DataFrame(args, columns=list(range(arity))) if args else pd.DataFrame(columns=list(range(arity)))
    frame[arity] = values
    return frame


def _pam_throw(options: dict, where: str) -> bool:
    """PSL's ``pam.throw`` (true by default): whether an open atom neither observed nor a target is an error."""
    for key, value in options.items():
        if str(key).lower() == "pam.throw":
            text = value.strip().lower() if isinstance(value, str) else None
            if not isinstance(value, bool) and text not in ("true", "false"):
                raise ValueError(f"{where}: option {_short(key)} must be true or false; got {_short(value)}.")
            return value is True or text == "true"
    return True


def _options(model, options: dict, where: str) -> None:
    if not isinstance(options, dict):
        raise ValueError(f"{where}: `options` must be an object; got {_short(options)}.")
    from .learning import LEARNING_PREFIXES, _all_known

    known = _all_known()
    ignored = []
    for key, value in options.items():
        k = str(key).lower()
        if k == "runtime.learn":
            text = value.strip().lower() if isinstance(value, str) else None
            if not isinstance(value, bool) and text not in ("true", "false"):
                raise ValueError(f"{where}: option {_short(key)} must be true or false; got {_short(value)}.")
            model.learn_requested = value is True or text == "true"
        elif k == "pam.throw":
            pass  # read before the model is built (missing_atoms)
        elif k == "runtime.learn.method":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{where}: option {_short(key)} must name a learner; got {_short(value)}.")
            model.learn_method = value.strip()
        elif k == "random.seed":  # PSL seeds its random numbers from it: learning's draws here
            try:
                model.learn_seed = _option_int(value, minimum=0)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(
                    f"{where}: option {_short(key)} must be an integer >= 0; got {_short(value)}."
                ) from None
        elif k.startswith(LEARNING_PREFIXES) and k in known:  # a learner's option (a misspelled one is ignored)
            model.learn_options[str(key)] = value
        elif k in OPTION_MAP:
            name, conv, expected = OPTION_MAP[k]
            try:
                model.solve_options[name] = conv(value)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"{where}: option {_short(key)} must be {expected}; got {_short(value)}.") from None
        else:
            ignored.append(str(key))
    model.ignored_options = ignored
    if ignored:
        warnings.warn(
            f"PSL options without meaning here (ignored): {', '.join(ignored)}; honoured: {', '.join(OPTION_MAP)}.",
            UserWarning,
            stacklevel=4,
        )


def model_from_json(
    cls, path, *, split: str = "infer", database=None, strict: bool = False, missing_atoms: str | None = None
):
    """Build a :class:`~tractable.psl.Model` from a PSL 2.4 JSON configuration (see the module docstring).

    ``missing_atoms`` None: the program's ``pam.throw`` decides (true, PSL's default: ``"error"``; false:
    ``"drop"``)."""
    if split not in ("learn", "infer"):
        raise ValueError(f"`split` must be 'learn' or 'infer'; got {split!r}.")
    path = os.fspath(path)
    cfg = read_json(path)
    base = os.path.dirname(os.path.abspath(path))
    if missing_atoms is None:
        throw = _pam_throw((cfg.get("options") or {}) if isinstance(cfg.get("options"), dict) else {}, path)
        missing_atoms = "error" if throw else "drop"
    model = cls(database=database, strict=strict, missing_atoms=missing_atoms)
    preds = cfg.get("predicates", {})
    if not isinstance(preds, dict) or not preds:
        raise ValueError(f"{path}: `predicates` must be a non-empty object with keys 'Name/arity'.")
    for key, spec in preds.items():
        m = _KEY.fullmatch(key)
        if m is None:
            raise ValueError(f"{path}: predicate key {_short(key)} must be 'Name/arity', e.g. 'Friends/2'.")
        arity = _arity(key, m.group(2), path)
        if not isinstance(spec, dict):
            raise ValueError(f"{path}: predicate {_short(key)} must map to an object; got {_short(spec)}.")
        unknown = sorted(set(spec) - {"observations", "targets", "truth", "types", "evaluations", "options"})
        if unknown:
            raise ValueError(
                f"{path}: predicate {_short(key)} has the unknown key {_short(unknown[0])} "
                "(expected observations, targets, truth, types, evaluations)."
            )
        model.add_predicate(m.group(1), arity, closed="targets" not in spec)
        for part in ("observations", "targets", "truth"):
            for src in _sources(spec.get(part, []), split, f"{path}: {key} {part}", base, arity):
                model.add_data(m.group(1), part, src)
        if "evaluations" in spec:
            model.evaluators[f"{m.group(1)}/{arity}"] = _evaluations(spec["evaluations"], f"{path}: {key}")
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
        body = _strip_yaml_comment(raw.rstrip("\r")).rstrip()
        if body.strip():
            if "\t" in body[: len(body) - len(body.lstrip())]:
                raise ValueError(f"{path}, line {number}: indent with spaces, not tabs.")
            lines.append((len(body) - len(body.lstrip()), body.strip(), number))

    def block(i: int, indent: int, depth: int = 1):
        if i >= len(lines):
            return None, i
        if depth > MAX_NESTING:
            raise ValueError(f"{path}, line {lines[i][2]}: blocks nested more than MAX_NESTING = {MAX_NESTING} deep.")
        if lines[i][1].startswith("- ") or lines[i][1] == "-":
            out = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("-"):
                item = lines[i][1][1:].strip()
                num = lines[i][2]
                i += 1
                if item.endswith(":") and ":" not in item[:-1]:
                    child, i = (
                        block(i, lines[i][0], depth + 1) if i < len(lines) and lines[i][0] > indent else (None, i)
                    )
                    out.append({item[:-1].strip(): child})
                elif item:
                    out.append(_scalar(item, path, num))
                else:
                    raise ValueError(f"{path}, line {num}: an empty list item.")
            return out, i
        out = {}
        while i < len(lines) and lines[i][0] == indent:
            text, num = lines[i][1], lines[i][2]
            if text.startswith("-"):
                raise ValueError(f"{path}, line {num}: a list item among mapping keys.")
            if ":" not in text:
                raise ValueError(f"{path}, line {num}: expected 'key: value'; got {_short(text)}.")
            key, _, value = text.partition(":")
            key, value = key.strip(), value.strip()
            i += 1
            if value:
                val = _scalar(value, path, num)
            elif i < len(lines) and lines[i][0] > indent:
                val, i = block(i, lines[i][0], depth + 1)
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


def _strip_yaml_comment(line: str) -> str:
    """``line`` without its YAML comment: a ``#`` outside quotes, at the start or after a space or tab."""
    if "#" not in line:
        return line
    quote = None
    k = 0
    while k < len(line):
        ch = line[k]
        if quote:
            if ch == "\\" and quote == '"':
                k += 1
            elif ch == quote and quote == "'" and line.startswith("''", k):
                k += 1  # '' inside single quotes is one quote
            elif ch == quote:
                quote = None
        elif ch in "'\"" and (k == 0 or line[k - 1] in " \t[,:-"):
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1] in " \t"):
            return line[:k]
        k += 1
    return line


def _scalar(s: str, path: str = "", number: int = 0, depth: int = 1):
    s = s.strip()
    if s.startswith("[") and s.endswith("]"):
        if depth > MAX_NESTING:
            raise ValueError(f"{path}, line {number}: [...] lists nested more than MAX_NESTING = {MAX_NESTING} deep.")
        return [_scalar(x, path, number, depth + 1) for x in s[1:-1].split(",") if x.strip()]
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
        raise ValueError(
            f"{path}: unknown section {_short(unknown[0])} (expected predicates, observations, targets, truth)."
        )
    base = os.path.dirname(os.path.abspath(path))
    preds = {}
    if not isinstance(doc["predicates"], dict) or not doc["predicates"]:
        raise ValueError(
            f"{path}: `predicates` must map 'Name/arity' keys to open or closed (one per line, indented); "
            f"got {_short(doc['predicates'])}."
        )
    for key, spec in doc["predicates"].items():
        m = _KEY.fullmatch(key)
        if m is None:
            raise ValueError(f"{path}: predicate {_short(key)} must be 'Name/arity'.")
        _arity(key, m.group(2), path)
        flags = spec if isinstance(spec, list) else [spec]
        words = [f for f in flags if isinstance(f, str)]
        if ("open" in words) == ("closed" in words):
            raise ValueError(f"{path}: predicate {key} must be declared either open or closed; got {_short(spec)}.")
        preds[key] = {"closed": "closed" in words}
    out = {"predicates": preds}
    for part in ("observations", "targets", "truth"):
        section = doc.get(part) or {}
        if not isinstance(section, dict):
            raise ValueError(f"{path}: `{part}` must map predicate names to data files; got {_short(section)}.")
        out[part] = {}
        for name, paths in section.items():
            paths = paths if isinstance(paths, list) else [paths]
            if not paths or not all(isinstance(p, str) and p for p in paths):
                raise ValueError(
                    f"{path}: `{part}` of {name}: expected a data file path or a list of paths; got "
                    f"{_short(section[name])}."
                )
            out[part][name] = [os.path.join(base, p) for p in paths]
    return out


def model_from_data_file(
    cls, psl_path, data_path, *, database=None, strict: bool = False, missing_atoms: str = "error"
):
    """Build a :class:`~tractable.psl.Model` from a ``.psl`` rule file and a ``.data`` file."""
    spec = read_data_file(data_path)
    model = cls(database=database, strict=strict, missing_atoms=missing_atoms)
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
