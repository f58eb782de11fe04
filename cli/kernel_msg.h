/* SPDX-License-Identifier: Apache-2.0
 * The Jupyter messaging protocol's wire format (version 5.3), without the
 * sockets: a message is a list of ZeroMQ frames
 *   routing identities..., "<IDS|MSG>", signature, header, parent_header,
 *   metadata, content, extra buffers...
 * whose signature is the HMAC-SHA256 (OpenSSL) of the four JSON frames,
 * in lowercase hex, under the key of the connection file. Decoding checks
 * the shape, the signature and the JSON (jansson) and never trusts a
 * length; a bad message is refused with a reason, never a crash
 * (tests/fuzz/fuzz_kernel_msg.c). Pure functions: any thread. */
#ifndef DML_CLI_KERNEL_MSG_H
#define DML_CLI_KERNEL_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* One ZeroMQ frame: p[0..n). */
typedef struct KFrame {
    unsigned char *p;
    size_t n;
} KFrame;

/* A decoded message. 'header', 'parent', 'metadata' and 'content' are JSON
 * objects (owned references); 'type' is the header's msg_type (borrowed
 * from 'header'); 'ids' are copies of the routing identities. */
typedef struct KMsg {
    KFrame *ids;
    int nids;
    json_t *header, *parent, *metadata, *content;
    const char *type;
} KMsg;

/* The key that signs messages (the connection file's "key"); an empty key
 * means messages are neither signed nor checked, as the protocol allows. */
typedef struct KKey {
    const unsigned char *p;
    size_t n;
} KKey;

/* Most frames a message may have, and most bytes of one JSON frame: a
 * larger message is refused rather than parsed. */
#define KMSG_MAX_FRAMES 64
#define KMSG_MAX_JSON (64u << 20)

/* Decodes frames[0..n) into *m (owned: kmsg_free). False with a reason in
 * why[0..cap) and nothing to free when the message is malformed or its
 * signature is wrong. */
bool kmsg_decode(const KFrame *frames, int n, KKey key, KMsg *m, char *why, size_t cap);
void kmsg_free(KMsg *m);

/* Encodes m (ids, then the four JSON parts, signed with 'key') into
 * malloc'd frames: *out (kframes_free) and *nout. False when out of memory
 * or a part is not JSON that can be written. */
bool kmsg_encode(const KMsg *m, KKey key, KFrame **out, int *nout);
void kframes_free(KFrame *f, int n);

/* A new header object: a fresh random msg_id, 'session', the username,
 * the current UTC date, msg_type and the protocol version. NULL when out
 * of memory. */
json_t *kmsg_new_header(const char *msg_type, const char *session);

/* A JSON string of text[0..n): invalid UTF-8 bytes become U+FFFD (jansson
 * accepts only UTF-8, and DML may print any bytes). NULL when out of
 * memory. */
json_t *kjson_text(const char *text, size_t n);

#endif
