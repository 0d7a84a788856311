/* test-charges-state.c - unit tests of the charges' state file format
 * (lib/format/charges-state.h): what is written reads back the same, and the
 * strict parser refuses every kind of damage (header, version, length,
 * checksum, JSON, members, paths, values, duplicates) whole, with a reason. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "charges-state.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* A state of two resources, one with charges (a control character and a
 * space in a cgroup name, negative and extreme values), one without. */
static void sample(struct charges_state *s)
{
	size_t a, b;

	assert_int_equal(charges_state_add_resource(s, "gpu", "bytes", &a), 0);
	assert_int_equal(charges_state_add_resource(s, "slots", "count", &b), 0);
	assert_int_equal(charges_state_add_entry(s, a, "/", 5), 0);
	assert_int_equal(charges_state_add_entry(s, a, "/a b/c\n\"d\"", -7), 0);
	assert_int_equal(charges_state_add_entry(s, a, "/system.slice/db.service", CHARGES_STATE_VALUE_MAX), 0);
	assert_int_equal(charges_state_add_entry(s, a, "/x", -CHARGES_STATE_VALUE_MAX), 0);
}

static void test_round_trip(void **state)
{
	struct charges_state s = { 0 }, back = { 0 };
	char *buf = NULL, reason[200];
	size_t len = 0;

	(void)state;
	sample(&s);
	assert_int_equal(charges_state_serialise(&s, &buf, &len), 0);
	assert_int_equal(strlen(buf), len);
	assert_memory_equal(buf, "acctd-charges 1 ", 16);
	assert_int_equal(charges_state_parse(buf, len, &back, reason, sizeof(reason)), 0);
	assert_int_equal(back.nr_resources, 2);
	assert_string_equal(back.resources[0].name, "gpu");
	assert_string_equal(back.resources[0].unit, "bytes");
	assert_string_equal(back.resources[1].name, "slots");
	assert_int_equal(back.resources[1].nr_entries, 0);
	/* The parser sorts each resource's entries by path. */
	const struct charges_state_resource *r = &back.resources[0];
	assert_int_equal(r->nr_entries, 4);
	assert_string_equal(r->entries[0].path, "/");
	assert_int_equal(r->entries[0].value, 5);
	assert_string_equal(r->entries[1].path, "/a b/c\n\"d\"");
	assert_int_equal(r->entries[1].value, -7);
	assert_string_equal(r->entries[2].path, "/system.slice/db.service");
	assert_true(r->entries[2].value == CHARGES_STATE_VALUE_MAX);
	assert_true(r->entries[3].value == -CHARGES_STATE_VALUE_MAX);
	charges_state_clear(&back);
	charges_state_clear(&s);
	free(buf);
}

static void test_empty_state(void **state)
{
	struct charges_state s = { 0 }, back = { 0 };
	char *buf = NULL, reason[200];
	size_t len = 0;

	(void)state;
	assert_int_equal(charges_state_serialise(&s, &buf, &len), 0);
	assert_int_equal(charges_state_parse(buf, len, &back, reason, sizeof(reason)), 0);
	assert_int_equal(back.nr_resources, 0);
	free(buf);
}

static void test_builder_checks(void **state)
{
	struct charges_state s = { 0 };
	size_t i;

	(void)state;
	assert_int_equal(charges_state_add_resource(&s, "", "count", NULL), -EINVAL);
	assert_int_equal(charges_state_add_resource(&s, "a", "", NULL), -EINVAL);
	assert_int_equal(charges_state_add_resource(&s, "a", "count", &i), 0);
	assert_int_equal(charges_state_add_resource(&s, "a", "bytes", NULL), -EEXIST);
	assert_int_equal(charges_state_add_entry(&s, 1, "/", 1), -EINVAL);
	assert_int_equal(charges_state_add_entry(&s, i, "a", 1), -EINVAL);
	assert_int_equal(charges_state_add_entry(&s, i, "/", CHARGES_STATE_VALUE_MAX + 1), -EINVAL);
	assert_int_equal(charges_state_add_entry(&s, i, "/", -CHARGES_STATE_VALUE_MAX - 1), -EINVAL);
	charges_state_clear(&s);
	assert_int_equal(s.nr_resources, 0);
}

/* A file of `body` with a header that is right for it. */
static char *file_of(const char *body, size_t *ret_len)
{
	char *out = NULL;
	size_t blen = strlen(body);
	uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)body, (uInt)blen);
	int n = asprintf(&out, "acctd-charges 1 %zu %08" PRIx32 "\n%s", blen, crc, body);
	assert_true(n > 0);
	*ret_len = (size_t)n;
	return out;
}

static void refused(const char *data, size_t len, const char *why_part)
{
	struct charges_state back = { 0 };
	char reason[200] = "";
	int r = charges_state_parse(data, len, &back, reason, sizeof(reason));

	if (r != -EBADMSG || !strstr(reason, why_part))
		print_error("%.*s: r=%d reason '%s', expected one with '%s'\n", (int)MIN(len, (size_t)120), data, r, reason,
			    why_part);
	assert_int_equal(r, -EBADMSG);
	assert_non_null(strstr(reason, why_part));
	assert_int_equal(back.nr_resources, 0);
	assert_null(back.resources);
}

static void refused_body(const char *body, const char *why_part)
{
	size_t len;
	char *f = file_of(body, &len);
	refused(f, len, why_part);
	free(f);
}

static void test_damaged_files(void **state)
{
	struct charges_state s = { 0 };
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	sample(&s);
	assert_int_equal(charges_state_serialise(&s, &buf, &len), 0);
	charges_state_clear(&s);

	refused("", 0, "no header");
	refused("garbage\n", 8, "no header");
	refused(buf, 10, "no header");
	/* every truncation of the content: the length says so */
	const char *body = strchr(buf, '\n') + 1;
	for (size_t cut = (size_t)(body - buf); cut < len; cut++)
		refused(buf, cut, "truncated");
	/* an extension */
	char *longer = malloc(len + 2);
	memcpy(longer, buf, len);
	memcpy(longer + len, " ", 2);
	refused(longer, len + 1, "truncated or extended");
	/* one byte of the content changed: the checksum */
	char *flip = strdup(buf);
	flip[len - 3] ^= 0x01;
	refused(flip, len, "checksum");
	/* the header's own damage */
	char *h = strdup(buf);
	h[14] = '2'; /* "acctd-charges 2 ..." */
	refused(h, len, "version 2");
	free(h);
	h = strdup(buf);
	memcpy(strchr(h, '\n') - 8, "ABCDEF01", 8); /* upper case hex */
	refused(h, len, "damaged header");
	free(h);
	refused("acctd-charges 1 01 00000000\n{", 29, "damaged header");  /* a leading zero */
	refused("acctd-charges 1 2 0000000\n{}", 28, "damaged header");   /* 7 hex digits */
	refused("acctd-charges 1 -2 00000000\n{}", 30, "damaged header"); /* a sign */
	refused("acctd-charges 1 2\n{}", 20, "damaged header");
	free(longer);
	free(flip);
	free(buf);
}

static void test_strict_document(void **state)
{
	(void)state;
	refused_body("", "not one JSON document");
	refused_body("{\"resources\":[]} ", "not one JSON document"); /* trailing bytes */
	refused_body("{\"resources\":[]}{}", "not one JSON document");
	refused_body("[]", "not an object of resources");
	refused_body("{}", "not an object of resources");
	refused_body("{\"resources\":{}}", "not an object of resources");
	refused_body("{\"resources\":[],\"x\":1}", "not an object of resources");
	refused_body("{\"resources\":[1]}", "resource 0: not an object");
	refused_body("{\"resources\":[{\"name\":\"a\",\"unit\":\"count\"}]}", "resource 0: not an object");
	refused_body("{\"resources\":[{\"name\":\"a\",\"unit\":\"count\",\"charges\":[],\"z\":0}]}",
		     "resource 0: not an object");
	refused_body("{\"resources\":[{\"name\":1,\"unit\":\"count\",\"charges\":[]}]}", "wrong type");
	refused_body("{\"resources\":[{\"name\":\"\",\"unit\":\"count\",\"charges\":[]}]}", "empty name");
	refused_body("{\"resources\":[{\"name\":\"a\",\"unit\":\"count\",\"charges\":[]},"
		     "{\"name\":\"a\",\"unit\":\"count\",\"charges\":[]}]}",
		     "resource a twice");
	const char *pre = "{\"resources\":[{\"name\":\"a\",\"unit\":\"count\",\"charges\":[";
	static const struct {
		const char *entry, *why;
	} bad[] = {
		{ "1", "not [path, integer]" },
		{ "[\"/a\"]", "not [path, integer]" },
		{ "[\"/a\",1,2]", "not [path, integer]" },
		{ "[\"/a\",1.5]", "not [path, integer]" },
		{ "[\"/a\",\"1\"]", "not [path, integer]" },
		{ "[1,\"/a\"]", "not [path, integer]" },
		{ "[\"a\",1]", "not a normalised" },
		{ "[\"/a/\",1]", "not a normalised" },
		{ "[\"//a\",1]", "not a normalised" },
		{ "[\"/a/../b\",1]", "not a normalised" },
		{ "[\"/a\\u0000b\",1]", "not a normalised" },
		{ "[\"/a\",4611686018427387905]", "out of range" },
		{ "[\"/a\",-4611686018427387905]", "out of range" },
		{ "[\"/a\",99999999999999999999999]", "out of range" },
		{ "[\"/a\",1],[\"/b\",2],[\"/a\",3]", "a cgroup twice" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *body = NULL;
		assert_true(asprintf(&body, "%s%s]}]}", pre, bad[i].entry) > 0);
		refused_body(body, bad[i].why);
		free(body);
	}
	/* and the good one of that shape */
	struct charges_state back = { 0 };
	char reason[200];
	size_t len;
	char *f = file_of("{\"resources\":[{\"name\":\"a\",\"unit\":\"count\",\"charges\":[[\"/a\",4611686018427387904]]}]}",
			  &len);
	assert_int_equal(charges_state_parse(f, len, &back, reason, sizeof(reason)), 0);
	assert_true(back.resources[0].entries[0].value == CHARGES_STATE_VALUE_MAX);
	charges_state_clear(&back);
	free(f);
}

/* Charge slots kept in systemd's descriptor store (the "slots" member): a
 * round trip, none written when there are none, and every malformed one
 * refused whole. */
static void test_slots(void **state)
{
	struct charges_state s = { 0 }, back = { 0 };
	char *buf = NULL, reason[200];
	size_t len = 0;

	(void)state;
	sample(&s);
	assert_int_equal(charges_state_serialise(&s, &buf, &len), 0);
	assert_null(strstr(buf, "\"slots\":")); /* no slot: the file of before */
	free(buf);
	struct charges_state_slot a = { .id = INT64_MAX, .resource = "gpu", .path = "/a b", .folded = -9, .pid = 77,
					 .nr_shards = 2, .nr_nodes = 1, .batch = 1024 };
	struct charges_state_slot b = { .id = 1, .resource = "slots", .path = "/", .folded = CHARGES_STATE_VALUE_MAX,
					 .pid = 1, .nr_shards = 64, .nr_nodes = 4, .batch = 1 };
	assert_int_equal(charges_state_add_slot(&s, &a), 0);
	assert_int_equal(charges_state_add_slot(&s, &b), 0);
	struct charges_state_slot bad = a;
	bad.id = 0;
	assert_int_equal(charges_state_add_slot(&s, &bad), -EINVAL);
	bad = a, bad.path = "a";
	assert_int_equal(charges_state_add_slot(&s, &bad), -EINVAL);
	bad = a, bad.batch = 0;
	assert_int_equal(charges_state_add_slot(&s, &bad), -EINVAL);
	assert_int_equal(charges_state_serialise(&s, &buf, &len), 0);
	assert_int_equal(charges_state_parse(buf, len, &back, reason, sizeof(reason)), 0);
	assert_int_equal(back.nr_slots, 2);
	assert_true(back.slots[0].id == INT64_MAX);
	assert_string_equal(back.slots[0].resource, "gpu");
	assert_string_equal(back.slots[0].path, "/a b");
	assert_int_equal(back.slots[0].folded, -9);
	assert_int_equal(back.slots[0].pid, 77);
	assert_int_equal(back.slots[0].nr_shards, 2);
	assert_int_equal(back.slots[0].batch, 1024);
	assert_true(back.slots[1].folded == CHARGES_STATE_VALUE_MAX);
	assert_int_equal(back.slots[1].nr_nodes, 4);
	charges_state_clear(&back);
	charges_state_clear(&s);
	free(buf);

	const char *pre = "{\"resources\":[],\"slots\":[";
	static const struct {
		const char *slot, *why;
	} bads[] = {
		{ "1", "not an array of 8" },
		{ "[1,\"gpu\",\"/a\",0,1,1,1]", "not an array of 8" },
		{ "[\"1\",\"gpu\",\"/a\",0,1,1,1,1]", "wrong type" },
		{ "[1,\"gpu\",\"/a\",0.5,1,1,1,1]", "wrong type" },
		{ "[1,\"gpu\",\"a\",0,1,1,1,1]", "not a normalised" },
		{ "[1,\"g\\u0000\",\"/a\",0,1,1,1,1]", "NUL byte" },
		{ "[0,\"gpu\",\"/a\",0,1,1,1,1]", "out of range" },
		{ "[1,\"gpu\",\"/a\",0,0,1,1,1]", "out of range" },
		{ "[1,\"gpu\",\"/a\",4611686018427387905,1,1,1,1]", "out of range" },
		{ "[1,\"gpu\",\"/a\",0,1,1,1,0]", "out of range" },
		{ "[1,\"\",\"/a\",0,1,1,1,1]", "out of range" },
		{ "[1,\"gpu\",\"/a\",0,1,1,1,1],[1,\"gpu\",\"/b\",0,1,1,1,1]", "id twice" },
	};
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		char *body = NULL;
		assert_true(asprintf(&body, "%s%s]}", pre, bads[i].slot) > 0);
		refused_body(body, bads[i].why);
		free(body);
	}
	refused_body("{\"resources\":[],\"slots\":{}}", "not an object of resources");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_empty_state),
		cmocka_unit_test(test_builder_checks), cmocka_unit_test(test_damaged_files),
		cmocka_unit_test(test_strict_document), cmocka_unit_test(test_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
