/* SPDX-License-Identifier: Apache-2.0
 * Rich output: where a builtin hands a picture when the front end can show
 * one itself (the Jupyter kernel shows it in the notebook). A front end
 * that cannot leaves 'show' NULL, and the builtin falls back to text
 * (plot() draws in the terminal). */
#ifndef DML_BASE_DISPLAY_H
#define DML_BASE_DISPLAY_H

#include <stdbool.h>
#include <stddef.h>

/* One rendering of the item shown: a MIME type ("image/png",
 * "image/svg+xml") and its bytes. */
typedef struct DisplayPart {
    const char *mime;
    const unsigned char *data;
    size_t n;
} DisplayPart;

typedef struct DisplaySink {
    /* Shows one item given as 'n' renderings of it (the front end picks);
     * the parts are borrowed for the call. Returns false when it could not
     * (out of memory), and the builtin reports that. Called on the thread
     * that runs the builtin. */
    bool (*show)(void *ctx, const DisplayPart *parts, int n);
    void *ctx;
} DisplaySink;

#endif
