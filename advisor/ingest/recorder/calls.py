"""What each traced function means for I/O: its kind, and where its file, size and offset are.

Argument positions are those of Recorder 2.5's wrappers (lib/recorder-posix.c, recorder-mpi.c,
recorder-hdf5.c): a POSIX call names its file by path (Recorder resolves descriptors and streams),
an MPI-IO call by its file handle ("0-0", named at MPI_File_open), an HDF5 call by object id.
"""

from __future__ import annotations

from dataclasses import dataclass

# kinds
OPEN, CLOSE, READ, WRITE, SEEK, STAT, SYNC, META, FLUSH, VIEW = (
    "open", "close", "read", "write", "seek", "stat", "sync", "meta", "flush", "view")


@dataclass(frozen=True)
class Call:
    """How to read one function's arguments: module it counts in, kind, argument positions."""

    module: str  # POSIX, STDIO, MPI-IO, H5F, H5D
    kind: str
    path: int = 0  # position of the path (POSIX, STDIO) or handle/id (MPI-IO, HDF5); -1: none
    size: int = -1  # position of the byte count (MPI-IO: element count)
    offset: int = -1  # position of an explicit offset
    nmemb: int = -1  # fread/fwrite: size * nmemb
    whence: int = -1
    mode: str = ""  # MPI-IO: indep, coll, split, nb
    counter: str = ""  # the Darshan counter one call adds 1 to, where its kind does not say
    path2: int = -1  # position of a second path: the new name of rename and link
    size_bias: int = 0  # bytes the recorded size exceeds what the call wrote by


def _posix() -> dict[str, Call]:
    calls = {f: Call("POSIX", OPEN) for f in ("open", "open64", "creat", "creat64")}
    calls.update({
        "close": Call("POSIX", CLOSE),
        "read": Call("POSIX", READ, size=2), "write": Call("POSIX", WRITE, size=2),
        "pread": Call("POSIX", READ, size=2, offset=3), "pread64": Call("POSIX", READ, size=2, offset=3),
        "pwrite": Call("POSIX", WRITE, size=2, offset=3), "pwrite64": Call("POSIX", WRITE, size=2, offset=3),
        "readv": Call("POSIX", READ, size=1), "writev": Call("POSIX", WRITE, size=1),
        "lseek": Call("POSIX", SEEK, offset=1, whence=2), "lseek64": Call("POSIX", SEEK, offset=1, whence=2),
        "fsync": Call("POSIX", SYNC, counter="FSYNCS"), "fdatasync": Call("POSIX", SYNC, counter="FDSYNCS"),
        "mmap": Call("POSIX", META, path=4), "mmap64": Call("POSIX", META, path=4),
    })
    calls.update({f: Call("POSIX", STAT, path=1) for f in (
        "__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat", "__fxstat64")})
    calls.update({f: Call("POSIX", META) for f in (
        "mkdir", "rmdir", "unlink", "remove", "access", "chmod",
        "chown", "lchown", "utime", "symlink", "readlink", "mkfifo", "chdir", "dup",
        "dup2", "opendir")})
    calls.update({"rename": Call("POSIX", META, path2=1), "link": Call("POSIX", META, path2=1),
                  "truncate": Call("POSIX", META, size=1), "ftruncate": Call("POSIX", META, size=1)})
    # the *at variants: Recorder writes the directory descriptor's path first, then the path
    calls.update({"linkat": Call("POSIX", META, path=1, path2=3), "readlinkat": Call("POSIX", META, path=1),
                  "faccessat": Call("POSIX", META, path=1), "symlinkat": Call("POSIX", META, path=2),
                  "mknod": Call("POSIX", META, path=1), "mknodat": Call("POSIX", META, path=2)})
    # calls on no path (pointers, descriptor numbers, the process): counted per function only
    calls.update({f: Call("POSIX", META, path=-1) for f in (
        "getcwd", "readdir", "closedir", "rewinddir", "pipe", "umask", "msync")})
    # fcntl: mostly the byte-range locks ROMIO takes around data sieving and read-modify-write, part
    # of the MPI-IO call above (Darshan times no fcntl): never the file's metadata time
    calls["fcntl"] = Call("POSIX", META, path=-1)
    return calls


def _stdio() -> dict[str, Call]:
    return {
        "fopen": Call("STDIO", OPEN), "fopen64": Call("STDIO", OPEN), "fdopen": Call("STDIO", OPEN),
        "fclose": Call("STDIO", CLOSE),
        "fread": Call("STDIO", READ, path=3, size=1, nmemb=2),
        "fwrite": Call("STDIO", WRITE, path=3, size=1, nmemb=2),
        # fprintf, recorded as vfprintf: Recorder's wrapper writes vsnprintf(NULL, 0, ...) + 1, the
        # formatted length with the terminating NUL that fprintf never writes
        "vfprintf": Call("STDIO", WRITE, size=1, size_bias=1),
        "fseek": Call("STDIO", SEEK, offset=1, whence=2), "fseeko": Call("STDIO", SEEK, offset=1, whence=2),
        "ftell": Call("STDIO", SEEK), "ftello": Call("STDIO", SEEK),
        "fileno": Call("STDIO", META), "tmpfile": Call("STDIO", OPEN, path=-1),
    }


def _mpiio() -> dict[str, Call]:
    calls = {
        "MPI_File_open": Call("MPI-IO", OPEN, path=1),
        "MPI_File_close": Call("MPI-IO", CLOSE),
        "MPI_File_sync": Call("MPI-IO", SYNC),
        "MPI_File_set_view": Call("MPI-IO", VIEW, offset=1),
        "MPI_File_set_size": Call("MPI-IO", META, size=1), "MPI_File_get_size": Call("MPI-IO", META),
        "MPI_File_seek": Call("MPI-IO", SEEK, offset=1, whence=2),
        "MPI_File_seek_shared": Call("MPI-IO", SEEK, offset=1, whence=2, mode="shared"),
    }
    for op, kind in (("read", READ), ("write", WRITE)):
        for suffix, mode in (("", "indep"), ("_shared", "indep"), ("_all", "coll"), ("_ordered", "coll"),
                             ("_all_begin", "split"), ("_ordered_begin", "split")):
            calls[f"MPI_File_{op}{suffix}"] = Call("MPI-IO", kind, size=2, mode=mode)
        calls[f"MPI_File_{op}_at"] = Call("MPI-IO", kind, size=3, offset=1, mode="indep")
        calls[f"MPI_File_{op}_at_all"] = Call("MPI-IO", kind, size=3, offset=1, mode="coll")
        calls[f"MPI_File_{op}_at_all_begin"] = Call("MPI-IO", kind, size=3, offset=1, mode="split")
        calls[f"MPI_File_i{op}"] = Call("MPI-IO", kind, size=2, mode="nb")
        calls[f"MPI_File_i{op}_shared"] = Call("MPI-IO", kind, size=2, mode="nb")
        calls[f"MPI_File_i{op}_at"] = Call("MPI-IO", kind, size=3, offset=1, mode="nb")
    return calls


def _hdf5() -> dict[str, Call]:
    calls = {"H5Fcreate": Call("H5F", OPEN), "H5Fopen": Call("H5F", OPEN), "H5Fclose": Call("H5F", CLOSE),
             "H5Fflush": Call("H5F", FLUSH)}
    calls.update({f: Call("H5D", OPEN, path=1) for f in ("H5Dopen1", "H5Dopen2")})
    # H5D_CREATES, ours: a record is named by the dataset's name as given, not its full path, so
    # datasets of one name in several groups share one; its opens beyond its creates are reopens
    calls.update({f: Call("H5D", OPEN, path=1, counter="CREATES") for f in ("H5Dcreate1", "H5Dcreate2")})
    calls.update({"H5Dclose": Call("H5D", CLOSE), "H5Dread": Call("H5D", READ), "H5Dwrite": Call("H5D", WRITE),
                  "H5Dset_extent": Call("H5D", META)})
    calls.update({f: Call("H5D", META) for f in ("H5Dget_space", "H5Dget_type", "H5Dget_create_plist")})
    return calls


CALLS: dict[str, Call] = {**_posix(), **_stdio(), **_mpiio(), **_hdf5()}

# What the functions no Darshan counter holds are, for `show`: HDF5's other interfaces by the
# letter after H5, and MPI's non-I/O calls.
HDF5_INTERFACES = {"A": "attribute", "D": "dataset", "E": "error", "F": "file", "G": "group",
                   "L": "link", "O": "object", "P": "property list", "R": "reference",
                   "S": "dataspace", "T": "datatype", "Z": "filter"}
_META_KINDS = {**dict.fromkeys(("unlink", "remove"), "remove"), "mkdir": "mkdir", "rmdir": "rmdir",
               **dict.fromkeys(("opendir", "readdir", "closedir", "rewinddir"), "directory"),
               "rename": "rename", **dict.fromkeys(("link", "linkat", "symlink", "symlinkat"), "link"),
               **dict.fromkeys(("truncate", "ftruncate", "MPI_File_set_size"), "truncate"),
               **dict.fromkeys(("access", "faccessat", "MPI_File_get_size"), "stat"),
               **dict.fromkeys(("mmap", "mmap64", "msync"), "map"), "fcntl": "lock"}
MPI_SEEK = {"MPI_SEEK_SET": 0, "MPI_SEEK_CUR": 1, "MPI_SEEK_END": 2}


def kind_of(name: str) -> str:
    """The operation kind of a traced function ("unknown" for one this reader does not know)."""
    spec = CALLS.get(name)
    if spec is not None:
        return _META_KINDS.get(name, spec.kind) if spec.kind == META else spec.kind
    if name.startswith("H5") and len(name) > 2 and name[2] in HDF5_INTERFACES:
        return f"hdf5 {HDF5_INTERFACES[name[2]]}"
    if name.startswith("MPI_") and not name.startswith("MPI_File"):
        return "mpi"
    return "unknown"

# Darshan's default DARSHAN_EXCLUDE_DIRS: system paths a Darshan log never holds.
EXCLUDED_DIRS = ("/etc/", "/dev/", "/usr/", "/bin/", "/boot/", "/lib/", "/opt/", "/sbin/", "/sys/",
                 "/proc/", "/var/")
# Sizes of the predefined MPI datatypes Recorder prints by name (derived ones: MPI_TYPE_UNKNOWN).
MPI_TYPE_SIZES = {
    "MPI_BYTE": 1, "MPI_CHAR": 1, "MPI_SIGNED_CHAR": 1, "MPI_UNSIGNED_CHAR": 1, "MPI_PACKED": 1,
    "MPI_SHORT": 2, "MPI_UNSIGNED_SHORT": 2, "MPI_INT": 4, "MPI_UNSIGNED": 4, "MPI_FLOAT": 4,
    "MPI_INT32_T": 4, "MPI_UINT32_T": 4, "MPI_LONG": 8, "MPI_UNSIGNED_LONG": 8, "MPI_DOUBLE": 8,
    "MPI_LONG_LONG": 8, "MPI_LONG_LONG_INT": 8, "MPI_UNSIGNED_LONG_LONG": 8, "MPI_INT64_T": 8,
    "MPI_UINT64_T": 8, "MPI_OFFSET": 8, "MPI_LONG_DOUBLE": 16, "MPI_DOUBLE_COMPLEX": 16,
    "MPI_COMPLEX": 8, "MPI_INTEGER": 4, "MPI_REAL": 4, "MPI_DOUBLE_PRECISION": 8, "MPI_REAL8": 8,
}


def traced_path(text: str) -> bool:
    """A real file path Darshan would record (not a pointer, a placeholder or a system path)."""
    return text.startswith("/") and not text.startswith(EXCLUDED_DIRS)


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0
