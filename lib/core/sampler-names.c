/* sampler-names.c - the names of the pass report's enums (sampler.h), as
 * Status, acctctl and /metrics show them. */
#include "sampler.h"

const char *acct_pass_part_to_string(enum acct_pass_part p)
{
	static const char *const names[_ACCT_PART_MAX] = {
		[ACCT_PART_MEMORY] = "memory", [ACCT_PART_CPU] = "cpu", [ACCT_PART_IO] = "io",
		[ACCT_PART_PSI] = "psi",       [ACCT_PART_LOAD] = "load",  [ACCT_PART_MEMORY_STAT] = "memory_stat",
	};
	return p < _ACCT_PART_MAX ? names[p] : "unknown";
}

const char *acct_part_outcome_to_string(enum acct_part_outcome o)
{
	static const char *const names[_ACCT_OUTCOME_MAX] = {
		[ACCT_OUTCOME_READ] = "read", [ACCT_OUTCOME_PRUNED] = "pruned", [ACCT_OUTCOME_SKIPPED] = "skipped"
	};
	return o < _ACCT_OUTCOME_MAX ? names[o] : "unknown";
}

enum acct_pass_kind acct_pass_kind_of(unsigned flags)
{
	return flags & ACCT_PASS_KERNEL ? ACCT_KIND_WALK
	       : flags & ACCT_PASS_EVENT ? ACCT_KIND_EVENT
	       : flags & ACCT_PASS_SLOW  ? ACCT_KIND_SLOW
	       : flags & ACCT_PASS_LOAD  ? ACCT_KIND_LOAD
					 : ACCT_KIND_FAST;
}

const char *acct_pass_kind_to_string(enum acct_pass_kind k)
{
	static const char *const names[_ACCT_KIND_MAX] = {
		[ACCT_KIND_FAST] = "fast", [ACCT_KIND_SLOW] = "slow", [ACCT_KIND_LOAD] = "load",
		[ACCT_KIND_EVENT] = "event", [ACCT_KIND_WALK] = "walk",
	};
	return k < _ACCT_KIND_MAX ? names[k] : "unknown";
}

const char *acct_sample_error_to_string(enum acct_sample_error e)
{
	static const char *const names[_ACCT_ERR_MAX] = {
		[ACCT_ERR_VANISHED] = "vanished",
		[ACCT_ERR_GARBAGE] = "garbage",
		[ACCT_ERR_UNREADABLE] = "unreadable",
		[ACCT_ERR_INVARIANT] = "invariant",
	};
	return e < _ACCT_ERR_MAX ? names[e] : "unknown";
}
