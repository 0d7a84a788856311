/* metrics-lines.c - the lines of a /metrics page: a family's header, a
 * sample's name, suffix and labels (escaped where they need it), and the
 * generic writers of the family rows that name their series
 * (metrics-render-internal.h). Below the three parts that use them, so that
 * none of them calls back into another. */
#include <string.h>

#include "basic/name-escape.h"
#include "basic/util.h"
#include "metrics-render-internal.h"

/* ---- label values -------------------------------------------------------------- */

#define LABEL_MAX_EXPANSION 5 /* one byte -> "\\xNN" */

/* Escape per the text format and OpenMetrics (\\ \" \n) the served text of
 * the name in text mode (name-escape.h), the rule of acctd's log and
 * acctctl's tables: bytes that are not UTF-8 (a Prometheus label value must
 * be UTF-8), C0, DEL, C1 and bidi controls (promtool and Prometheus take
 * them, but a terminal running curl obeys them) become the four characters
 * \xNN, whose backslash the label escapes in turn. Room for
 * LABEL_MAX_EXPANSION * n bytes is needed. */
static char *put_label_value(char *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = name_escape_span(s + i, n - i, NAME_ESCAPE_TEXT);
		for (size_t j = i; j < i + k; j++) {
			if (s[j] == '\\' || s[j] == '"')
				*o++ = '\\';
			*o++ = s[j]; /* no '\n': text mode escaped it */
		}
		i += k;
		if (i >= n)
			break;
		/* a control (all its bytes) or a byte that is not UTF-8: each
		 * byte alone is one that text mode writes as \xNN */
		size_t l = MAX(utf8_char_len(s + i, n - i), (size_t)1);
		for (size_t j = 0; j < l; j++, i++) {
			*o++ = '\\'; /* the label's escape of the served text's backslash */
			o += name_escape_to(o, s + i, 1, NAME_ESCAPE_TEXT);
		}
	}
	return o;
}

/* ---- lines ------------------------------------------------------------------- */

static void header(struct acct_metrics_page *p, const struct fam *f)
{
	static const char *const types[] = { "gauge", "counter", "histogram", "info" };
	size_t nl = strlen(f->name), hl = strlen(f->help), ul = f->unit ? strlen(f->unit) : 0;
	char *o = text_buf_reserve(&p->w, 3 * nl + hl + ul + 80);

	if (!o)
		return;
	p->header_done = true;
	if (p->om) {
		o = text_put_mem(text_put_str(o, "# TYPE "), f->name, nl);
		*o++ = ' ';
		o = text_put_str(o, types[f->type]);
		*o++ = '\n';
		if (f->unit) {
			o = text_put_mem(text_put_str(o, "# UNIT "), f->name, nl);
			*o++ = ' ';
			o = text_put_mem(o, f->unit, ul);
			*o++ = '\n';
		}
		o = text_put_mem(text_put_str(o, "# HELP "), f->name, nl);
	} else {
		const char *sfx = sample_suffix(f);
		o = text_put_str(text_put_mem(text_put_str(o, "# HELP "), f->name, nl), sfx);
	}
	*o++ = ' ';
	o = text_put_mem(o, f->help, hl); /* no \ or newline in our help texts */
	*o++ = '\n';
	if (!p->om) {
		o = text_put_str(text_put_mem(text_put_str(o, "# TYPE "), f->name, nl), sample_suffix(f));
		*o++ = ' ';
		o = text_put_str(o, f->type == T_INFO ? "gauge" : types[f->type]);
		*o++ = '\n';
	}
	text_buf_commit(&p->w, o);
}

char *metrics_line(struct acct_metrics_page *p, const struct fam *f, const char *suffix, const struct row *r,
		   const struct lbl *l, size_t nl)
{
	if (p->counting) {
		p->counted++;
		return NULL; /* the callers write nothing for NULL */
	}
	size_t name_len = p->name_len[p->fi];
	size_t need = name_len + 16 + 64 + (r ? LABEL_MAX_EXPANSION * (size_t)r->len + 12 : 0);
	for (size_t i = 0; i < nl; i++)
		need += strlen(l[i].name) + 4 + LABEL_MAX_EXPANSION * strlen(l[i].value);

	if (!p->header_done)
		header(p, f);
	char *o = text_buf_reserve(&p->w, need);
	if (!o)
		return NULL;
	o = text_put_str(text_put_mem(o, f->name, name_len), suffix);
	if (!r && nl == 0) {
		*o++ = ' ';
		return o;
	}
	*o++ = '{';
	if (r) {
		const char *path = p->arena + r->path;
		/* cAdvisor's families name the cgroup path id, as dashboards query it */
		o = f->group == ACCT_MF_CADVISOR ? text_put_mem(o, "id=\"", 4) : text_put_mem(o, "cgroup=\"", 8);
		o = r->plain ? text_put_mem(o, path, r->len) : put_label_value(o, path, r->len);
		*o++ = '"';
	}
	for (size_t i = 0; i < nl; i++) {
		if (r || i > 0)
			*o++ = ',';
		o = text_put_str(o, l[i].name);
		*o++ = '=';
		*o++ = '"';
		const char *v = l[i].value;
		size_t vl = strlen(v);
		o = label_plain(v, vl) ? text_put_mem(o, v, vl) : put_label_value(o, v, vl);
		*o++ = '"';
	}
	*o++ = '}';
	*o++ = ' ';
	return o;
}

/* ---- the generic series writers ------------------------------------------------------ */

void metrics_cg_quantities(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (size_t i = 0; i < f->nr_series; i++) {
		const struct series *s = &f->series[i];
		enum acct_quantity q = s->q;
		if (!known(r, q) || (acct_quantity_info(q)->limit && r->q[q] < 0))
			continue;
		sample_fixed(p, f, r, s->l, series_labels(s), r->q[q], unit_decimals(q));
	}
}

void metrics_cg_fields(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (size_t i = 0; i < f->nr_series; i++) {
		const struct series *s = &f->series[i];
		if (!field_shown(r, &s->v))
			continue;
		char *o = metrics_line(p, f, sample_suffix(f), r, s->l, series_labels(s));
		if (o)
			end_line(p, put_field(o, r, &s->v));
	}
}
