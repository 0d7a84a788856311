/* ledger-json.h - the ledger as JSON (json-c), shared by `acctd --dump`, the
 * varlink API and acctctl, so that every consumer sees the same names.
 *
 * A value is {"value": V, "bound": B, "age_us": A} (bound and age omitted when
 * 0 / unknown), or null when it has never been read; memory and cpu.usage add
 * "motion_per_s" once their rate is known, a fresh read's values "fresh": true. Units are in the names'
 * documentation (docs/ledger.md): bytes, microseconds, counts. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "basic/text-buf.h"
#include "core/fresh.h"
#include "core/ledger.h"
#include "core/reconcile.h"
#include "core/sampler.h"

/* One cgroup's record and its List entry are each defined once, by a text
 * writer below; the json-c forms are parsed from that text. Parsing costs
 * about 1.5 times what building the objects directly did (10,000 records:
 * ~0.8 s against ~0.54 s; the writer alone ~0.05 s; tests/bench/bench-json),
 * paid only by --dump, --state-file and Watch.
 *
 * The full record of one cgroup. `precise` forces precise counter reads.
 * Returns a new object or NULL on allocation failure. */
struct json_object *acct_cgroup_to_json(struct acct_ledger *l, const struct acct_cgroup *cg, uint64_t now_us,
					bool precise, unsigned nr_nodes);

/* One element of List, exactly the interface's CgroupSummary: memory (a
 * value), cpu_rate (a float value), load1 and psi_some_avg10 ({cpu, memory,
 * io}: the "some" avg10 of each resource, 0 for one never read), the I/O
 * rates, tasks and the I/O totals io_read_bytes and io_write_bytes (values),
 * each null until first read. Returns a new object or NULL on allocation failure. */
struct json_object *acct_cgroup_list_entry_json(const struct acct_cgroup *cg, uint64_t now_us);

/* The writers: the documents above as text, the one definition of each. The
 * text is what json-c prints for them with JSON_C_TO_STRING_PLAIN |
 * JSON_C_TO_STRING_NOSLASHESCAPE, written without building objects (about ten
 * times cheaper: the API's Get and List). They append to a growable buffer; a
 * failed allocation sets `failed`, and the writers then return -ENOMEM. */
struct acct_json_buf {
	/* lib/basic's text buffer (text-buf.h), which the writers fill; its
	 * fields keep the names that the buffer's users read. */
	union {
		struct text_buf text;
		struct {
			char *data; /* NUL-terminated while not failed */
			size_t len, alloc;
			bool failed;
		};
	};
};
void acct_json_buf_append(struct acct_json_buf *b, const char *s, size_t n);
/* Free the text; the buffer is empty and usable again. */
void acct_json_buf_free(struct acct_json_buf *b);
int acct_cgroup_write_json(struct acct_json_buf *b, struct acct_ledger *l, const struct acct_cgroup *cg, uint64_t now_us,
			   bool precise, unsigned nr_nodes);
/* The same, with the quantities of a fresh read (fresh.h; NULL: none) served
 * from it instead of the ledger: its value and kernel bound, age_us since the
 * read, and "fresh": true. */
int acct_cgroup_write_json_fresh(struct acct_json_buf *b, struct acct_ledger *l, const struct acct_cgroup *cg,
				 uint64_t now_us, bool precise, unsigned nr_nodes, const struct acct_fresh_reading *fresh);
int acct_cgroup_list_entry_write(struct acct_json_buf *b, const struct acct_cgroup *cg, uint64_t now_us);

struct json_object *acct_reconcile_to_json(const struct acct_reconcile_report *rep);
struct json_object *acct_pass_to_json(const struct acct_pass_report *pass);
struct json_object *acct_drift_to_json(const struct histogram *h);

/* A json-c string of the served text of s (name-escape.h: bytes that are not
 * UTF-8 become \xHH), for any text that may hold a cgroup path; json-c
 * itself would print such bytes as they are, and the document would not be
 * JSON. NULL on ENOMEM. */
struct json_object *acct_json_text(const char *s);
