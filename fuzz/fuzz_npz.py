"""Fuzz target: the ``.npz`` model loader of hinge-loss MRFs (``tractable.hlmrf.HLMRF.load``).

Two kinds of input, picked by the first byte:

- raw bytes, written as the file: truncated, corrupt or foreign archives;
- an archive built from the bytes: every array of the format (``tractable.hlmrf.FILE_FORMAT``), each with
  a dtype, shape and values drawn from the input, sometimes dropped or of another dtype. Raw mutations
  rarely get past the zip checksums; these reach the validation of the arrays themselves.

Either the model loads, and then survives a round trip through :meth:`~tractable.hlmrf.HLMRF.save`, or the
loader raises ``ValueError`` naming the file.
"""

import io
import zipfile

import atheris
import numpy as np

with atheris.instrument_imports(include=["tractable"]):
    from tractable.hlmrf import FILE_FORMAT, FILE_VERSION, HLMRF

from _target import check_reader, input_path, main, write

KEYS = (
    "n_variables", "pot_indptr", "pot_variables", "pot_coefficients", "pot_constants", "pot_weights", "pot_power",
    "con_indptr", "con_variables", "con_coefficients", "con_constants", "con_senses", "fixed_variables",
    "fixed_values",
)  # fmt: skip
DTYPES = (np.int64, np.int32, np.uint8, np.float64, np.float32, np.bool_, np.complex128, "U3", object)
SPECIALS = (0.0, 1.0, -1.0, 0.5, 2.0, np.nan, np.inf, -np.inf, 1e300, -(2.0**63), 2.0**63)


def _array(fdp: atheris.FuzzedDataProvider) -> np.ndarray:
    ndim = fdp.ConsumeIntInRange(0, 2)
    shape = tuple(fdp.ConsumeIntInRange(0, 6) for _ in range(ndim))
    size = int(np.prod(shape)) if shape else 1
    values = []
    for _ in range(size):
        if fdp.ConsumeBool():
            values.append(SPECIALS[fdp.ConsumeIntInRange(0, len(SPECIALS) - 1)])
        else:
            values.append(fdp.ConsumeIntInRange(-3, 8))
    dtype = DTYPES[fdp.ConsumeIntInRange(0, len(DTYPES) - 1)]
    with np.errstate(all="ignore"):
        try:
            return np.array(values, dtype=np.float64).astype(dtype).reshape(shape)
        except (ValueError, OverflowError):
            return np.zeros(shape, dtype=dtype)


def _structured(data: bytes) -> bytes:
    fdp = atheris.FuzzedDataProvider(data)
    arrays = {"format": np.array(FILE_FORMAT), "version": np.array(FILE_VERSION)}
    if fdp.ConsumeIntInRange(0, 15) == 0:
        arrays["format"] = np.array(fdp.ConsumeUnicode(8))
    if fdp.ConsumeIntInRange(0, 15) == 0:
        arrays["version"] = _array(fdp)
    for key in KEYS:
        if fdp.ConsumeIntInRange(0, 31) == 0:
            continue  # a missing array
        arrays[key] = _array(fdp)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for key, arr in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, arr, allow_pickle=True)  # object arrays: a pickled member
            zf.writestr(f"{key}.npy", member.getvalue())
    return buf.getvalue()


def test_one_input(data: bytes) -> None:
    raw = not data or data[0] & 1
    path = write(data[1:] if raw else _structured(data[1:]), ".npz")
    model = check_reader(HLMRF.load, path)
    if model is not None:
        again = input_path(".again.npz")
        model.save(again)
        copy = HLMRF.load(again)
        assert repr(copy) == repr(model)


if __name__ == "__main__":
    main(test_one_input)
