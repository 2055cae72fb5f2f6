/* page.h - the page served at GET / (server/page/index.html: HTML, CSS and
 * JavaScript in one file), embedded in the binary at build time.  The
 * Makefile turns the file into $(BUILD)/gen/page.c with od and sed, so the
 * daemon needs no files at run time and the page no network but the daemon.
 *
 *     respond(r, 200, "text/html; charset=utf-8", copy_of(page_html), page_html_len, ...);
 */
#ifndef ATTND_PAGE_H
#define ATTND_PAGE_H

#include <stddef.h>

/* The page's bytes (UTF-8, not NUL-terminated) and their count. */
extern const unsigned char page_html[];
extern const size_t page_html_len;

#endif
