// A detached helper thread, for a ThreadSafeSingleWriter whose queue keeps one thread
// busy serving other threads' writes for too long: that work moves to a helper, and the
// thread that ended the checkout gets back to its caller.

#include "sw_writer.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#endif

typedef struct {
  void (*body)(void *);
  void *context;
} sw_spawn_job;

#if defined(_WIN32)
static DWORD WINAPI sw_spawn_start(LPVOID argument) {
#else
static void *sw_spawn_start(void *argument) {
#endif
  sw_spawn_job job = *(sw_spawn_job *)argument;
  free(argument);
  job.body(job.context);
  return 0;
}

bool sw_spawn_detached(void (*body)(void *), void *context) {
#if defined(SINGLEWRITER_SCHED)
  // A helper of a scheduled thread is scheduled too.
  if (sw_sched_registered()) return sw_sched_spawn(body, context);
#endif
  sw_spawn_job *job = malloc(sizeof *job);
  if (job == NULL) return false;
  job->body = body;
  job->context = context;
#if defined(_WIN32)
  HANDLE thread = CreateThread(NULL, 0, sw_spawn_start, job, 0, NULL);
  if (thread == NULL) {
    free(job);
    return false;
  }
  CloseHandle(thread);
  return true;
#else
  pthread_t thread;
  if (pthread_create(&thread, NULL, sw_spawn_start, job) != 0) {
    free(job);
    return false;
  }
  pthread_detach(thread);
  return true;
#endif
}
