"""Fuzz target: the ``.npz`` readers: ``tractable.io._npz.read_npz`` and the model loader of hinge-loss MRFs
(``tractable.hlmrf.HLMRF.load``).

Three kinds of input, picked by the first byte (modulo 3):

- raw bytes, written as the file: truncated, corrupt or foreign archives;
- an archive built from the bytes: every array of the format (``tractable.hlmrf.FILE_FORMAT``), each with
  a dtype, shape and values drawn from the input, sometimes dropped or of another dtype. Raw mutations
  rarely get past the zip checksums; these reach the validation of the arrays themselves;
- an archive with one member whose ``.npy`` header declares a shape drawn from the input (up to 10**13
  entries) over a few bytes of data: it must be refused before anything is allocated.

``read_npz`` either returns the arrays or raises ``ValueError`` naming the file. Then either the model
loads, and survives a round trip through :meth:`~tractable.hlmrf.HLMRF.save`, or the loader raises
``ValueError`` naming the file. An archive that ``check_npz`` refuses for its declared sizes is not handed
to ``HLMRF.load`` until that loader reads through ``tractable.io._npz`` (it lets NumPy allocate first).
"""

import io
import zipfile

import numpy as np
from _target import BytesProvider, check_reader, input_path, instrument, main, write

with instrument():
    from tractable.hlmrf import FILE_FORMAT, FILE_VERSION, HLMRF
    from tractable.io._npz import check_npz, read_npz

KEYS = (
    "n_variables", "pot_indptr", "pot_variables", "pot_coefficients", "pot_constants", "pot_weights", "pot_power",
    "con_indptr", "con_variables", "con_coefficients", "con_constants", "con_senses", "fixed_variables",
    "fixed_values",
)  # fmt: skip
DTYPES = (np.int64, np.int32, np.uint8, np.float64, np.float32, np.bool_, np.complex128, "U3", object)
SPECIALS = (0.0, 1.0, -1.0, 0.5, 2.0, np.nan, np.inf, -np.inf, 1e300, -(2.0**63), 2.0**63)


def _array(fdp: BytesProvider) -> np.ndarray:
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
    fdp = BytesProvider(data)
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


def _crafted(data: bytes) -> bytes:
    """An archive whose one member declares a shape of up to 10**13 entries over at most 64 bytes of data."""
    fdp = BytesProvider(data)
    ndim = fdp.ConsumeIntInRange(1, 3)
    shape = tuple(fdp.ConsumeIntInRange(0, 10**13 if i == 0 else 10**4) for i in range(ndim))
    dtype = np.dtype(fdp.PickValueInList(["<f8", "<i8", "|u1", "<c16", "<U7", "|b1"]))
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": dtype.str, "fortran_order": False, "shape": shape})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("phi.npy", header.getvalue() + fdp.ConsumeBytes(64))
    return buf.getvalue()


def test_one_input(data: bytes) -> None:
    kind = data[0] % 3 if data else 0
    body = data[1:]
    content = body if kind == 0 else _structured(body) if kind == 1 else _crafted(body)
    path = write(content, ".npz")
    try:
        check_npz(path)
    except ValueError as err:
        assert str(path) in str(err), f"check_npz raised a ValueError that does not name the file: {err}"
        if "declares" in str(err) or "inflates" in str(err):
            return  # HLMRF.load would let NumPy allocate what the header declares (see the docstring)
    check_reader(read_npz, path)
    model = check_reader(HLMRF.load, path)
    if model is not None:
        again = input_path(".again.npz")
        model.save(again)
        copy = HLMRF.load(again)
        assert repr(copy) == repr(model)


if __name__ == "__main__":
    main(test_one_input)
