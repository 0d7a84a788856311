/* state-file.h - --state-file: the ledger, tombstones included, as one JSON
 * document replaced atomically after every pass (docs: the state file), for
 * readers that cannot speak varlink. */
#pragma once

#include "manager.h"

/* Register the state file as a front end of m when its configuration source
 * names one (--state-file; nothing otherwise). Before manager_start().
 * Returns 0 or -ENOMEM. */
int state_file_add(struct manager *m);
