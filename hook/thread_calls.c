/* thread_calls.c — thread creation: the process's first thread beside the
 * main one is made only after the library did what costs microseconds with
 * one thread and an RCU grace period with two (process/self.c).
 */
#include <pthread.h>

#include "hook.h"
#include "preload_api.h"

HK_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	hk_enter();
	sl_before_threads();
	return HK_NEXT(pthread_create)(thread, attr, start, arg);
}
