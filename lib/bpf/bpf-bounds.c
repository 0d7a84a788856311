/* bpf-bounds.c - the kernel's memcg batching from its BTF (bpf-bounds.h):
 * CPUs, the charge batch, how many memcgs a CPU's charge stock caches, the
 * page size. */
#include "bpf-bounds.h"

#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "basic/util.h"

void acct_bpf_memcg_batching_from_btf(struct acct_memcg_batching *ret, unsigned nr_cpus, const struct btf *btf)
{
	/* Unknown counts make bounds larger, not smaller: the possible CPUs
	 * from libbpf (/sys/devices/system/cpu/possible), else those the C
	 * library counts as configured; the online ones unknown are 0, which
	 * the bounds take as nr_cpus (the kernel's larger flush threshold). */
	int cpus = libbpf_num_possible_cpus();
	long conf = cpus > 0 ? cpus : sysconf(_SC_NPROCESSORS_CONF);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	*ret = (struct acct_memcg_batching){
		.nr_cpus = nr_cpus ? nr_cpus : conf > 0 ? (unsigned)conf : 1,
		/* the real count even under an injected nr_cpus: it is the
		 * kernel's threshold that a record is compared with */
		.nr_online = online > 0 ? (unsigned)online : 0,
		.charge_batch = 64,
		.stock_slots = 1,
		.page_size = sysconf(_SC_PAGESIZE),
	};
	/* How many memcgs a CPU's charge stock caches: the length of
	 * memcg_stock_pcp.nr_pages[] where it is an array (Linux 6.16+), one
	 * where it is a single counter. Without BTF, the largest known. */
	if (!btf) {
		ret->stock_slots = 7;
		return;
	}
	int id = btf__find_by_name_kind(btf, "memcg_stock_pcp", BTF_KIND_STRUCT);
	if (id > 0) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_member *m = btf_members(t);
		for (unsigned i = 0; i < btf_vlen(t); i++, m++) {
			if (strcmp(btf__name_by_offset(btf, m->name_off), "nr_pages") != 0)
				continue;
			const struct btf_type *mt = btf__type_by_id(btf, m->type);
			if (mt && btf_is_array(mt))
				ret->stock_slots = MAX(btf_array(mt)->nelems, 1u);
		}
	}
}

struct btf *acct_bpf_btf_load(const char *btf_path)
{
	return btf_path ? btf__parse(btf_path, NULL) : btf__load_vmlinux_btf();
}

void acct_bpf_memcg_batching_detect(struct acct_memcg_batching *ret, unsigned nr_cpus, const char *btf_path)
{
	struct btf *btf = acct_bpf_btf_load(btf_path);
	acct_bpf_memcg_batching_from_btf(ret, nr_cpus, btf);
	btf__free(btf);
}
