/* linger.h - a graceful close for connections answered before their body
 * was read: half-closed, then read and discarded for a bounded time, so the
 * client reads the answer rather than a reset (linger.c). */
#ifndef ATTND_LINGER_H
#define ATTND_LINGER_H

#include <stdbool.h>

#define LINGER_MAX     64   /* sockets lingering at once */
#define LINGER_IDLE_S  5.0  /* closed after this long without a byte */
#define LINGER_TOTAL_S 30.0 /* closed after this long whatever comes */

typedef struct linger_set linger_set;

/* Starts the lingering thread; NULL when out of memory or threads. */
linger_set *linger_new(void);

/* Takes fd, a socket whose answer is fully sent: half-closes it and reads
 * and discards until the client closes, LINGER_IDLE_S of silence or
 * LINGER_TOTAL_S, then closes it.  With LINGER_MAX already lingering (or no
 * lg), closes fd at once and returns false. */
bool linger_add(linger_set *lg, int fd);

/* Stops the thread and closes every socket it holds. */
void linger_free(linger_set *lg);

#endif
