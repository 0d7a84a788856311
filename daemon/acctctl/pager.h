/* pager.h - stdout through a pager, as systemctl does. */
#pragma once

/* When stdout is a terminal and --no-pager was not given, pipe stdout into
 * $ACCTD_PAGER, $PAGER or less (-FRSXMK: quits at once when everything fits);
 * an empty $PAGER or "cat" means none. SIGINT is ignored from then on (the
 * pager handles ^C) and pager_close() runs at exit. Failures leave stdout
 * as it was. Idempotent. */
void pager_open(void);
/* Flush and close stdout and wait for the pager; nothing when none runs. */
void pager_close(void);
