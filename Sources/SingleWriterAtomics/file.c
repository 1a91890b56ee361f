// Replacing a file atomically and durably; see sw_file.h.

#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif

#include "sw_file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#if defined(_WIN32)
#include <stdlib.h>
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#if defined(_WIN32)

/// `utf8` as a new UTF-16 string for the wide Windows calls, or null; free it.
static wchar_t *sw_wide(const char *utf8) {
  int length = MultiByteToWideChar(CP_UTF8, 0, utf8, -1, NULL, 0);
  if (length <= 0) return NULL;
  wchar_t *wide = (wchar_t *)malloc((size_t)length * sizeof(wchar_t));
  if (wide && MultiByteToWideChar(CP_UTF8, 0, utf8, -1, wide, length) <= 0) {
    free(wide);
    return NULL;
  }
  return wide;
}

/// The `errno` value nearest to a Windows error.
static int sw_errno_of(DWORD code) {
  switch (code) {
  case ERROR_FILE_NOT_FOUND:
  case ERROR_PATH_NOT_FOUND:
  case ERROR_INVALID_DRIVE: return ENOENT;
  case ERROR_ACCESS_DENIED:
  case ERROR_SHARING_VIOLATION:
  case ERROR_LOCK_VIOLATION: return EACCES;
  case ERROR_DISK_FULL:
  case ERROR_HANDLE_DISK_FULL: return ENOSPC;
  case ERROR_WRITE_PROTECT: return EROFS;
  case ERROR_NOT_ENOUGH_MEMORY:
  case ERROR_OUTOFMEMORY: return ENOMEM;
  case ERROR_DIRECTORY: return ENOTDIR;
  default: return EIO;
  }
}

int sw_replace_file(
    const char *path, const char *temp_path, const char *folder, const void *bytes,
    size_t count, int *error) {
  (void)folder;  // MOVEFILE_WRITE_THROUGH makes the rename last
  int step = SW_FILE_CREATE;
  wchar_t *wide_path = sw_wide(path);
  wchar_t *wide_temp = sw_wide(temp_path);
  HANDLE file = INVALID_HANDLE_VALUE;
  if (!wide_path || !wide_temp) {
    *error = EINVAL;
    goto failed;
  }
  file = CreateFileW(
      wide_temp, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
  if (file == INVALID_HANDLE_VALUE) goto failed_windows;
  step = SW_FILE_WRITE;
  const char *next = (const char *)bytes;
  while (count > 0) {
    DWORD chunk = count > 0x40000000 ? 0x40000000 : (DWORD)count;
    DWORD written = 0;
    if (!WriteFile(file, next, chunk, &written, NULL) || written == 0) goto failed_windows;
    next += written;
    count -= written;
  }
  step = SW_FILE_SYNC;
  if (!FlushFileBuffers(file)) goto failed_windows;
  CloseHandle(file);
  file = INVALID_HANDLE_VALUE;
  step = SW_FILE_RENAME;
  if (!MoveFileExW(wide_temp, wide_path, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
    goto failed_windows;
  }
  free(wide_path);
  free(wide_temp);
  return SW_FILE_DONE;
failed_windows:
  *error = sw_errno_of(GetLastError());
failed:
  if (file != INVALID_HANDLE_VALUE) CloseHandle(file);
  if (wide_temp && step != SW_FILE_CREATE) DeleteFileW(wide_temp);
  free(wide_path);
  free(wide_temp);
  return step;
}

int sw_file_kind(const char *path, int *error) {
  wchar_t *wide = sw_wide(path);
  if (!wide) {
    *error = EINVAL;
    return SW_FILE_UNKNOWN;
  }
  // Opened, not asked for its attributes: the attributes of a link are its own, and an
  // open follows it to the file (backup semantics let it open a folder too).
  HANDLE file = CreateFileW(
      wide, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
      FILE_FLAG_BACKUP_SEMANTICS, NULL);
  free(wide);
  if (file == INVALID_HANDLE_VALUE) {
    DWORD code = GetLastError();
    if (code == ERROR_FILE_NOT_FOUND || code == ERROR_PATH_NOT_FOUND) return SW_FILE_MISSING;
    *error = sw_errno_of(code);
    return SW_FILE_UNKNOWN;
  }
  // A pipe or a device first: only a file on disk has the information asked next.
  BY_HANDLE_FILE_INFORMATION info;
  BOOL on_disk = GetFileType(file) == FILE_TYPE_DISK;
  BOOL known = on_disk && GetFileInformationByHandle(file, &info);
  DWORD code = GetLastError();
  CloseHandle(file);
  if (!on_disk) {
    *error = EINVAL;
    return SW_FILE_OTHER;
  }
  if (!known) {
    *error = sw_errno_of(code);
    return SW_FILE_UNKNOWN;
  }
  if (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) {
    *error = EISDIR;
    return SW_FILE_OTHER;
  }
  return SW_FILE_REGULAR;
}

int sw_flush_folder(const char *folder, int *error) {
  // A rename or a new folder is written through on Windows: nothing to flush.
  (void)folder;
  (void)error;
  return 0;
}

void sw_error_message(int error, char *buffer, size_t capacity) {
  if (capacity == 0) return;
  if (strerror_s(buffer, capacity, error) != 0) snprintf(buffer, capacity, "error %d", error);
}

#else

/// Flushes `fd` to storage: past the drive's cache on Apple, where `fsync` stops short of
/// it (falling back to `fsync` on a file system without `F_FULLFSYNC`).
static int sw_flush(int fd) {
#if defined(__APPLE__)
  if (fcntl(fd, F_FULLFSYNC) == 0) return 0;
#endif
  while (fsync(fd) != 0) {
    if (errno != EINTR) return -1;
  }
  return 0;
}

int sw_flush_folder(const char *folder, int *error) {
  int fd = open(folder, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  int flushed = sw_flush(fd);
  int flush_error = errno;
  close(fd);
  // A file system that cannot flush a folder (EINVAL, EBADF) orders its entries by itself.
  if (flushed != 0 && flush_error != EINVAL && flush_error != EBADF) {
    *error = flush_error;
    return -1;
  }
  return 0;
}

int sw_file_kind(const char *path, int *error) {
  struct stat found;
  if (stat(path, &found) != 0) {
    // A missing file, folder or link target, or a file on the way (no file can be under
    // it): nothing to read. ELOOP, EACCES, EIO say the system could not look.
    if (errno == ENOENT || errno == ENOTDIR) return SW_FILE_MISSING;
    *error = errno;
    return SW_FILE_UNKNOWN;
  }
  if (S_ISREG(found.st_mode)) return SW_FILE_REGULAR;
  *error = S_ISDIR(found.st_mode) ? EISDIR : EINVAL;
  return SW_FILE_OTHER;
}

int sw_replace_file(
    const char *path, const char *temp_path, const char *folder, const void *bytes,
    size_t count, int *error) {
  int fd;
  do {
    fd = open(temp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *error = errno;
    return SW_FILE_CREATE;
  }
  // A file made private stays private.
  struct stat old;
  if (stat(path, &old) == 0) (void)fchmod(fd, old.st_mode & 07777);
  int step = SW_FILE_WRITE;
  const char *next = (const char *)bytes;
  while (count > 0) {
    ssize_t written = write(fd, next, count);
    if (written < 0) {
      if (errno == EINTR) continue;
      goto failed;
    }
    if (written == 0) {
      errno = EIO;
      goto failed;
    }
    next += written;
    count -= (size_t)written;
  }
  step = SW_FILE_SYNC;
  if (sw_flush(fd) != 0) goto failed;
  // Flushed: a close that fails now has nothing left to lose.
  close(fd);
  fd = -1;
  step = SW_FILE_RENAME;
  if (rename(temp_path, path) != 0) goto failed;
  // The rename is in the folder's entries, which the folder's own flush writes out.
  return sw_flush_folder(folder, error) == 0 ? SW_FILE_DONE : SW_FILE_SYNC_FOLDER;
failed:
  *error = errno;
  if (fd >= 0) close(fd);
  unlink(temp_path);
  return step;
}

void sw_error_message(int error, char *buffer, size_t capacity) {
  if (capacity == 0) return;
  buffer[0] = 0;
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  // The GNU strerror_r, which may return a static string instead of filling `buffer`.
  const char *message = strerror_r(error, buffer, capacity);
  if (message != buffer) snprintf(buffer, capacity, "%s", message);
#else
  if (strerror_r(error, buffer, capacity) != 0) snprintf(buffer, capacity, "error %d", error);
#endif
}

#endif
