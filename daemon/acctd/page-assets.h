/* page-assets.h - the files of acctd's page (daemon/acctd/page/: its HTML,
 * script and style sheet), compiled into the binary by tools/embed-assets
 * at build time, so that the page needs nothing from the file system or the
 * network. The generated table lives in page-assets.c in the build tree. */
#pragma once

#include <stddef.h>

struct page_asset {
	const char *path;         /* the URL path: "/ui/" (index.html), "/ui/page.js", ... */
	const char *content_type; /* with its charset for text */
	const unsigned char *data;
	size_t size;
	const char *etag; /* quoted, from the bytes: changes with every build that changes the file */
};

/* Ended by an entry whose path is NULL. */
extern const struct page_asset page_assets[];
