// Thread names, call stacks and symbols for race reports, on each platform.

#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif

#include "SingleWriterAtomics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <io.h>
#include <windows.h>
#else
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#endif

#if defined(__APPLE__)
#include <execinfo.h>
#endif

void sw_write_stderr(const char *bytes, size_t count) {
#if defined(_WIN32)
  _write(2, bytes, (unsigned)count);
#else
  while (count > 0) {
    ssize_t written = write(2, bytes, count);
    if (written <= 0) return;
    bytes += written;
    count -= (size_t)written;
  }
#endif
}

static _Atomic(uintptr_t) sw_errors_printed;

void sw_print_error(const char *message) {
  fputs(message, stderr);
  fputc('\n', stderr);
  fflush(stderr);
  atomic_fetch_add_explicit(&sw_errors_printed, 1, memory_order_release);
}

uintptr_t sw_printed_error_count(void) {
  return atomic_load_explicit(&sw_errors_printed, memory_order_acquire);
}

#if !defined(_WIN32)
/// A function of the running process by name, or null: no link dependency on it. Looked
/// up once per `slot` (0: not yet, 1: missing, else the address); threads that race on
/// the first look-up find the same answer.
static void *sw_symbol(_Atomic(uintptr_t) *slot, const char *name) {
  uintptr_t found = atomic_load_explicit(slot, memory_order_acquire);
  if (found == 0) {
    void *address = dlsym(RTLD_DEFAULT, name);
    found = address ? (uintptr_t)address : 1;
    atomic_store_explicit(slot, found, memory_order_release);
  }
  return found == 1 ? NULL : (void *)found;
}
#endif

// MARK: - Thread names

#if defined(_WIN32)
typedef HRESULT(WINAPI *sw_get_thread_description)(HANDLE, PWSTR *);
#endif

int sw_current_thread_name(char *buffer, size_t capacity) {
  if (capacity == 0) return SW_THREAD_NAME_NONE;
  buffer[0] = 0;
#if defined(_WIN32)
  // Windows 10 1607 and later keep the whole name; earlier ones have none.
  sw_get_thread_description get = (sw_get_thread_description)(void (*)(void))GetProcAddress(
      GetModuleHandleW(L"kernel32.dll"), "GetThreadDescription");
  PWSTR wide = NULL;
  if (!get || FAILED(get(GetCurrentThread(), &wide)) || !wide) return SW_THREAD_NAME_NONE;
  int size = WideCharToMultiByte(CP_UTF8, 0, wide, -1, NULL, 0, NULL, NULL);
  int result = SW_THREAD_NAME_NONE;
  if (size > 1 && (size_t)size <= capacity) {
    WideCharToMultiByte(CP_UTF8, 0, wide, -1, buffer, (int)capacity, NULL, NULL);
    result = SW_THREAD_NAME_WHOLE;
  }
  LocalFree(wide);
  return result;
#elif defined(__APPLE__)
  // Apple keeps up to 63 bytes (MAXTHREADNAMESIZE): a name that fills them may be cut.
  char name[64] = {0};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 || !name[0]) {
    return SW_THREAD_NAME_NONE;
  }
  size_t length = strlen(name);
  if (length >= capacity) return SW_THREAD_NAME_NONE;
  memcpy(buffer, name, length + 1);
  return length >= 63 ? SW_THREAD_NAME_TRUNCATED : SW_THREAD_NAME_WHOLE;
#else
  // Linux keeps 15 bytes: a name that fills them may have been cut, and is marked so.
  // pthread_getname_np is looked up, as musl added it only in 1.2.3.
  typedef int (*get_name)(pthread_t, char *, size_t);
  static _Atomic(uintptr_t) slot;
  get_name get = (get_name)sw_symbol(&slot, "pthread_getname_np");
  char name[64] = {0};
  if (!get || get(pthread_self(), name, sizeof name) != 0 || !name[0]) {
    return SW_THREAD_NAME_NONE;
  }
  size_t length = strlen(name);
  if (length >= capacity) return SW_THREAD_NAME_NONE;
  memcpy(buffer, name, length + 1);
  return length >= 15 ? SW_THREAD_NAME_TRUNCATED : SW_THREAD_NAME_WHOLE;
#endif
}

#if defined(_WIN32)
static DWORD sw_main_thread_id;
/// Runs before main, on the main thread, when the program starts.
__attribute__((constructor)) static void sw_note_main_thread(void) {
  sw_main_thread_id = GetCurrentThreadId();
}
#endif

bool sw_is_main_thread(void) {
#if defined(_WIN32)
  return GetCurrentThreadId() == sw_main_thread_id;
#elif defined(__APPLE__)
  return pthread_main_np() != 0;
#elif defined(__linux__)
  // The main thread's kernel id is the process id. gettid is looked up: glibc added it
  // in 2.30, and calling the system call directly would bring in `syscall`.
  typedef pid_t (*get_tid)(void);
  static _Atomic(uintptr_t) slot;
  get_tid get = (get_tid)sw_symbol(&slot, "gettid");
  return get && get() == getpid();
#else
  return false;
#endif
}

// MARK: - Call stacks

int sw_backtrace(void **frames, int capacity) {
  void *all[129];
  if (capacity <= 0) return 0;
  int wanted = capacity + 1 < 129 ? capacity + 1 : 129;
  int count;
#if defined(_WIN32)
  count = (int)RtlCaptureStackBackTrace(0, (DWORD)wanted, all, NULL);
#elif defined(__APPLE__)
  count = backtrace(all, wanted);
#else
  // glibc has backtrace in libc; musl has none, and the stack is then left out.
  typedef int (*walk)(void **, int);
  static _Atomic(uintptr_t) slot;
  walk backtrace_function = (walk)sw_symbol(&slot, "backtrace");
  if (!backtrace_function) return 0;
  count = backtrace_function(all, wanted);
#endif
  if (count <= 1) return 0;
  memcpy(frames, all + 1, (size_t)(count - 1) * sizeof(void *));  // drop our own frame
  return count - 1;
}

#if !defined(_WIN32)
/// The last path component of `path`.
static const char *sw_basename(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}
#endif

void sw_describe_address(const void *address, char *buffer, size_t capacity) {
  if (capacity == 0) return;
#if defined(_WIN32)
  // Symbols need DbgHelp and PDBs; the module and offset are enough to look them up.
  HMODULE module = NULL;
  char path[MAX_PATH] = {0};
  if (GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                             GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                         (LPCSTR)address, &module) &&
      GetModuleFileNameA(module, path, sizeof path) > 0) {
    const char *name = strrchr(path, '\\');
    snprintf(buffer, capacity, "%s + 0x%llx", name ? name + 1 : path,
             (unsigned long long)((uintptr_t)address - (uintptr_t)module));
    return;
  }
  snprintf(buffer, capacity, "%p", address);
#else
  Dl_info info;
  memset(&info, 0, sizeof info);
  if (!dladdr(address, &info) || !info.dli_fname) {
    snprintf(buffer, capacity, "%p", address);
    return;
  }
  const char *image = sw_basename(info.dli_fname);
  if (!info.dli_sname || !info.dli_saddr) {
    // Not exported (a symbol of a stripped or non -rdynamic executable): the image
    // offset is what `addr2line` or `atos` need.
    snprintf(buffer, capacity, "%s + 0x%lx", image,
             (unsigned long)((uintptr_t)address - (uintptr_t)info.dli_fbase));
    return;
  }
  typedef char *(*demangle)(const char *, size_t, char *, size_t *, uint32_t);
  static _Atomic(uintptr_t) slot;
  demangle swift_demangle = (demangle)sw_symbol(&slot, "swift_demangle");
  char *readable = swift_demangle
                       ? swift_demangle(info.dli_sname, strlen(info.dli_sname), NULL, NULL, 0)
                       : NULL;
  snprintf(buffer, capacity, "%s  %s + %lu", image, readable ? readable : info.dli_sname,
           (unsigned long)((uintptr_t)address - (uintptr_t)info.dli_saddr));
  free(readable);
#endif
}

// MARK: - The current actor

#if !defined(_WIN32) && defined(__has_attribute) && __has_attribute(swiftcall)
/// The Swift runtime's `SerialExecutorRef`: the executor's identity object, nil for the
/// global executor, then a word that says how to call it.
typedef struct sw_serial_executor_ref {
  void *identity;
  uintptr_t implementation;
} sw_serial_executor_ref;
#endif

uintptr_t sw_current_task(void) {
#if !defined(_WIN32) && defined(__has_attribute) && __has_attribute(swiftcall)
  typedef __attribute__((swiftcall)) void *(*current_task)(void);
  static _Atomic(uintptr_t) slot;
  current_task get = (current_task)sw_symbol(&slot, "swift_task_getCurrent");
  return get ? (uintptr_t)get() : 0;
#else
  return 0;
#endif
}

uintptr_t sw_current_task_holder(void) {
  uintptr_t task = sw_current_task();
  if (task == 0) return 0;
#if !defined(_WIN32) && defined(__has_attribute) && __has_attribute(swiftcall)
  // The runtime numbers tasks from a process-wide counter, and a task's address is reused
  // once it is freed: the number, where the runtime says it.
  typedef __attribute__((swiftcall)) uint64_t (*task_id)(void *);
  static _Atomic(uintptr_t) slot;
  task_id get = (task_id)sw_symbol(&slot, "swift_task_getJobTaskId");
  uint64_t id = get ? get((void *)task) : 0;
  if (id != 0) return ((uintptr_t)id << 1) | 1;
#endif
  return task | 1;
}

uintptr_t sw_current_holder(void) {
  uintptr_t task = sw_current_task_holder();
  return task != 0 ? task : sw_current_thread_serial();
}

uintptr_t sw_current_executor_identity(void) {
#if !defined(_WIN32) && defined(__has_attribute) && __has_attribute(swiftcall)
  // Swift's calling convention; looked up, not linked, as `swift_demangle` is above.
  typedef __attribute__((swiftcall)) sw_serial_executor_ref (*current_executor)(void);
  static _Atomic(uintptr_t) slot;
  current_executor get = (current_executor)sw_symbol(&slot, "swift_task_getCurrentExecutor");
  return get ? (uintptr_t)get().identity : 0;
#else
  return 0;
#endif
}

bool sw_current_task_runs_inline(void) {
#if !defined(_WIN32) && defined(__has_attribute) && __has_attribute(swiftcall)
  if (sw_current_task() == 0) return false;
  typedef __attribute__((swiftcall)) sw_serial_executor_ref (*current_executor)(void);
  static _Atomic(uintptr_t) slot;
  current_executor get = (current_executor)sw_symbol(&slot, "swift_task_getCurrentExecutor");
  if (!get) return false;
  // The generic executor has no identity and no kind; a task started inline has no
  // identity and the kind the runtime gives a synchronous start.
  sw_serial_executor_ref executor = get();
  return executor.identity == NULL && executor.implementation != 0;
#else
  return false;
#endif
}

// MARK: - Thread-local slots

uintptr_t sw_thread_slot_create(void (*destructor)(void *)) {
#if defined(_WIN32)
  // Fiber-local storage is the Windows slot with a destructor. Its callback is WINAPI,
  // the one calling convention of x86_64 and arm64 Windows, so the cast is exact there.
  DWORD index = FlsAlloc((PFLS_CALLBACK_FUNCTION)(void (*)(void))destructor);
  return index == FLS_OUT_OF_INDEXES ? 0 : (uintptr_t)index + 1;
#else
  pthread_key_t key;
  if (pthread_key_create(&key, destructor) != 0) return 0;
  return (uintptr_t)key + 1;  // key 0 is valid; 0 means none here
#endif
}

void *sw_thread_slot_get(uintptr_t slot) {
  if (slot == 0) return NULL;
#if defined(_WIN32)
  return FlsGetValue((DWORD)(slot - 1));
#else
  return pthread_getspecific((pthread_key_t)(slot - 1));
#endif
}

void sw_thread_slot_set(uintptr_t slot, void *value) {
  if (slot == 0) return;
#if defined(_WIN32)
  FlsSetValue((DWORD)(slot - 1), value);
#else
  pthread_setspecific((pthread_key_t)(slot - 1), value);
#endif
}
