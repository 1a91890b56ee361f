// Replacing a file atomically and durably, for SingleWriterPersistence: every platform's
// calls for it (fsync, F_FULLFSYNC, rename, a folder's flush; Windows' MoveFileEx) live
// here, so the Swift sources carry no platform branches.

#ifndef SW_FILE_H
#define SW_FILE_H

#include <errno.h>
#include <stddef.h>

/// Which step of `sw_replace_file` failed.
enum {
  SW_FILE_DONE = 0,
  /// Creating the temporary file: the folder is missing, read-only, or not a folder.
  SW_FILE_CREATE = 1,
  /// Writing the bytes: the disk is full, say.
  SW_FILE_WRITE = 2,
  /// Flushing the temporary file to storage.
  SW_FILE_SYNC = 3,
  /// Renaming it over the file.
  SW_FILE_RENAME = 4,
  /// Flushing the folder, so that the rename survives a power loss.
  SW_FILE_SYNC_FOLDER = 5,
};

/// `errno` values for Swift, which sees no system header here: a path that does not exist
/// (a missing folder), one the file system cannot represent, a chain of symbolic links
/// too long to follow, and a path that names a folder where a file is.
enum {
  SW_FILE_NOT_FOUND = ENOENT,
  SW_FILE_BAD_PATH = EINVAL,
  SW_FILE_LINK_LOOP = ELOOP,
  SW_FILE_NOT_A_FOLDER = ENOTDIR,
};

/// Replaces the file at `path` with `count` bytes, so that a process killed (or a machine
/// that loses power) at any moment leaves the old file or the new one, whole:
/// writes them to `temp_path`, a file in the same folder (a leftover of a killed save is
/// replaced), flushes it to storage (`F_FULLFSYNC` on Apple, where `fsync` leaves it in
/// the drive's cache), renames it over `path`, and flushes `folder` where the platform
/// needs it for the rename to last (not on Windows, whose rename writes through).
/// The new file keeps the old one's permissions where the platform has them.
///
/// Returns `SW_FILE_DONE`, or the step that failed with `*error` set to its `errno`
/// (Windows errors mapped to the nearest one); the temporary file is then removed and
/// `path` left as it was, unless only the folder's flush failed (the rename is done).
/// Paths are UTF-8, as the file system spells them.
int sw_replace_file(
    const char *path, const char *temp_path, const char *folder, const void *bytes,
    size_t count, int *error);

/// Flushes the folder at `folder`, so that the entries made in it (a rename, a new
/// folder) survive a power loss; nothing to do on Windows, whose calls write through.
/// Returns 0, or -1 with `*error` set to its `errno`. A file system that cannot flush a
/// folder orders its entries by itself: that is not a failure.
int sw_flush_folder(const char *folder, int *error);

/// What `sw_file_kind` found at a path.
enum {
  /// A regular file, to read.
  SW_FILE_REGULAR = 0,
  /// Nothing: the file, a folder on its way or a linked file is missing, or a file on
  /// its way leaves no room for one.
  SW_FILE_MISSING = 1,
  /// Something that is not a regular file: a folder (`*error` is `EISDIR`), a named pipe,
  /// a device or a socket (`EINVAL`), which a read would fail on or wait at.
  SW_FILE_OTHER = 2,
  /// The system could not look: a loop of links, a folder the process may not search;
  /// `*error` holds why.
  SW_FILE_UNKNOWN = 3,
};

/// What is at `path`, following symbolic links, so that a load tells a file that is not
/// there (start from the default) from one it cannot look at (report it, never replace
/// it). Paths are UTF-8.
int sw_file_kind(const char *path, int *error);

/// Writes the platform's message for `errno` value `error`, NUL-terminated, into `buffer`.
void sw_error_message(int error, char *buffer, size_t capacity);

#endif
