/* time-util.c - time conversions (see time-util.h). */
#include "time-util.h"

#include "parse.h"

struct timeval timeval_from_usec(uint64_t usec)
{
	return (struct timeval){ .tv_sec = (time_t)(usec / USEC_PER_SEC), .tv_usec = (suseconds_t)(usec % USEC_PER_SEC) };
}
