/* charge-units.h - the unit of each charged resource (docs/charges.md), so
 * that charged values print as the kernel's do: bytes as 64.0M, seconds as
 * durations, counts as integers.
 *
 * acctd's API serves charged values as bare integers (Get's and List's
 * Charged, Usage's ChargeUsage, History's ChargeSeries); Status lists the
 * resources it keeps with their units (`resources`), which acctctl asks for
 * once. Where that fails, values print as plain integers and the output
 * says why. */
#pragma once

#include <stdint.h>

struct json_object;

#include "basic/quantity.h"
#include "human.h"

/* Learn the units, once per process (later calls return at once): one
 * Status call. Never fails: what goes wrong
 * leaves the units unknown, with the reason in charge_units_unknown(). */
void charge_units_load(void);

/* The unit of resource `name`: ACCT_UNIT_BYTES, ACCT_UNIT_COUNT or
 * ACCT_UNIT_USEC (a seconds resource, charged in microseconds); -ENOENT when
 * it is not known (charge_units_load() not called, or it failed, or acctd
 * keeps no such resource). */
int charge_unit(const char *name);

/* The i-th resource known (in the order acctd lists them) and its
 * unit in *ret_unit (-ENOENT: not known); NULL past the last. */
const char *charge_units_resource(size_t i, int *ret_unit);

/* Why the units are not known (a sentence without its full stop), or NULL
 * when charge_units_load() learnt them. */
const char *charge_units_unknown(void);

/* Learn the units from Status's `status` object (its `resources` list),
 * replacing what was known; without such a list the units are unknown and
 * charge_units_unknown() says so. Returns 0 or -ENOMEM. For the tests and
 * charge_units_load(). */
int charge_units_from_status(struct json_object *status);
/* Forget every unit and the reason (for the tests). */
void charge_units_reset(void);

/* The unit's name as acctd.conf writes it: "bytes", "count" or "seconds";
 * "" for -ENOENT. For headers. */
const char *charge_unit_name(int unit);

/* Value v of resource `name`: fmt_unit() of its unit, fmt_int() when the
 * unit is not known. */
struct fbuf fmt_charge(const char *name, int64_t v);

/* The time unit in which an integral over `recorded_us` reads best: "s"
 * under a minute, "min" under an hour, else "h"; its seconds in *ret_s. */
const char *charge_time_unit(int64_t recorded_us, double *ret_s);

/* An integral of a resource of unit `unit` (-ENOENT: not known) over time,
 * `value_s` in the unit x seconds (Usage's value_seconds), in the time unit
 * of charge_time_unit(recorded_us): bytes x time as 1.5G·h, a seconds
 * resource (microseconds x s) as 12.5ms·h; count x time is a time, printed
 * as a duration (3 held for an hour: 3h), as CPU time (cores x time) is;
 * an unknown unit as the raw number, %.6g. The dot is ASCII '*' when the
 * output is not UTF-8. */
struct fbuf fmt_charge_integral(int unit, double value_s, int64_t recorded_us);
