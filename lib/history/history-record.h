/* history-record.h - what recording (history-record.c) gives the opening of
 * the store besides history-store.h's recording calls. Internal to
 * lib/history. */
#pragma once

#include <stdint.h>

#include "history-store.h"

/* Start this run, at now_us: end the runs that did not close (at their last
 * recording), end the lives of other boots (the reboot removed them, at the
 * end of their boot's last run), and note this boot's last recording before
 * (prev_run_end_us). One transaction; returns 0 or a negative errno with
 * *ret_error (nothing changed). */
int history_run_start(struct history_store *s, uint64_t now_us, char **ret_error);
