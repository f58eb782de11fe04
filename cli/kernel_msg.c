/* SPDX-License-Identifier: Apache-2.0
 * The Jupyter wire format: decode, check, encode and sign (contracts in
 * kernel_msg.h). */
#include "kernel_msg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "../base/diag.h"
#include "../base/strbuf.h"

static const char delim[] = "<IDS|MSG>";

/* Lowercase hex HMAC-SHA256 of the four JSON parts into hex[65]. */
static bool sign(KKey key, const KFrame parts[4], char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t total = 0;
    for (int i = 0; i < 4; i++)
        total += parts[i].n;
    unsigned char *buf = malloc(total ? total : 1);
    if (!buf)
        return false;
    size_t at = 0;
    for (int i = 0; i < 4; i++) {
        if (parts[i].n)
            memcpy(buf + at, parts[i].p, parts[i].n);
        at += parts[i].n;
    }
    bool ok = HMAC(EVP_sha256(), key.p, (int)key.n, buf, total, md, &mdlen) != NULL && mdlen == 32;
    free(buf);
    if (!ok)
        return false;
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
    return true;
}

static void set_why(char *why, size_t cap, const char *s)
{
    if (cap)
        snprintf(why, cap, "%s", s);
}

/* Parses a JSON frame that must hold an object. */
static json_t *parse_object(const KFrame *f, const char *what, char *why, size_t cap)
{
    if (f->n > KMSG_MAX_JSON) {
        if (cap)
            snprintf(why, cap, "%s: larger than %u bytes", what, KMSG_MAX_JSON);
        return NULL;
    }
    json_error_t e;
    json_t *j = json_loadb((const char *)f->p, f->n, JSON_REJECT_DUPLICATES, &e);
    if (!j) {
        if (cap)
            snprintf(why, cap, "%s: not JSON (%s)", what, e.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        if (cap)
            snprintf(why, cap, "%s: not a JSON object", what);
        return NULL;
    }
    return j;
}

bool kmsg_decode(const KFrame *frames, int n, KKey key, KMsg *m, char *why, size_t cap)
{
    memset(m, 0, sizeof *m);
    if (n > KMSG_MAX_FRAMES) {
        set_why(why, cap, "too many frames");
        return false;
    }
    int d = 0;
    while (d < n && !(frames[d].n == sizeof delim - 1 && memcmp(frames[d].p, delim, sizeof delim - 1) == 0))
        d++;
    if (d == n) {
        set_why(why, cap, "no <IDS|MSG> delimiter");
        return false;
    }
    if (n - d - 1 < 5) {
        set_why(why, cap, "fewer than 5 frames after the delimiter");
        return false;
    }
    const KFrame *sig = &frames[d + 1], *parts = &frames[d + 2];
    if (key.n) {
        char hex[65];
        if (!sign(key, parts, hex)) {
            set_why(why, cap, "out of memory checking the signature");
            return false;
        }
        if (sig->n != 64 || CRYPTO_memcmp(sig->p, hex, 64) != 0) {
            set_why(why, cap, "wrong signature");
            return false;
        }
    }
    static const char *const names[4] = {"header", "parent_header", "metadata", "content"};
    json_t *j[4] = {0};
    for (int i = 0; i < 4; i++)
        if (!(j[i] = parse_object(&parts[i], names[i], why, cap))) {
            for (int k = 0; k < i; k++)
                json_decref(j[k]);
            return false;
        }
    const char *type = json_string_value(json_object_get(j[0], "msg_type"));
    if (!type || !*type) {
        for (int k = 0; k < 4; k++)
            json_decref(j[k]);
        set_why(why, cap, "header: no msg_type");
        return false;
    }
    m->ids = d ? calloc((size_t)d, sizeof *m->ids) : NULL;
    bool oom = d && !m->ids;
    for (int i = 0; i < d && !oom; i++) {
        m->ids[i].p = malloc(frames[i].n ? frames[i].n : 1);
        if (!m->ids[i].p) {
            oom = true;
            break;
        }
        if (frames[i].n)
            memcpy(m->ids[i].p, frames[i].p, frames[i].n);
        m->ids[i].n = frames[i].n;
        m->nids = i + 1;
    }
    m->header = j[0];
    m->parent = j[1];
    m->metadata = j[2];
    m->content = j[3];
    m->type = type;
    if (oom) {
        kmsg_free(m);
        set_why(why, cap, "out of memory");
        return false;
    }
    return true;
}

void kmsg_free(KMsg *m)
{
    kframes_free(m->ids, m->nids);
    json_decref(m->header);
    json_decref(m->parent);
    json_decref(m->metadata);
    json_decref(m->content);
    memset(m, 0, sizeof *m);
}

void kframes_free(KFrame *f, int n)
{
    for (int i = 0; i < n; i++)
        free(f[i].p);
    free(f);
}

static bool dump(json_t *j, KFrame *f)
{
    char *s = json_dumps(j ? j : json_object(), JSON_COMPACT);
    if (!s)
        return false;
    f->p = (unsigned char *)s;
    f->n = strlen(s);
    return true;
}

bool kmsg_encode(const KMsg *m, KKey key, KFrame **out, int *nout)
{
    int n = m->nids + 6;
    KFrame *f = calloc((size_t)n, sizeof *f);
    if (!f)
        return false;
    bool ok = true;
    for (int i = 0; i < m->nids && ok; i++) {
        f[i].p = malloc(m->ids[i].n ? m->ids[i].n : 1);
        ok = f[i].p != NULL;
        if (ok && m->ids[i].n)
            memcpy(f[i].p, m->ids[i].p, m->ids[i].n);
        f[i].n = m->ids[i].n;
    }
    KFrame *parts = &f[m->nids + 2];
    json_t *j[4] = {m->header, m->parent, m->metadata, m->content};
    for (int i = 0; i < 4 && ok; i++)
        ok = dump(j[i], &parts[i]);
    if (ok) {
        f[m->nids].p = (unsigned char *)strdup(delim);
        f[m->nids].n = sizeof delim - 1;
        char hex[65] = "";
        ok = f[m->nids].p && (!key.n || sign(key, parts, hex));
        f[m->nids + 1].p = (unsigned char *)strdup(hex);
        f[m->nids + 1].n = strlen(hex);
        ok = ok && f[m->nids + 1].p;
    }
    if (!ok) {
        kframes_free(f, n);
        return false;
    }
    *out = f;
    *nout = n;
    return true;
}

json_t *kmsg_new_header(const char *msg_type, const char *session)
{
    unsigned char r[16];
    if (RAND_bytes(r, sizeof r) != 1)
        return NULL;
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);     /* a version-4 UUID */
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    char id[40];
    snprintf(id, sizeof id, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char date[64];
    snprintf(date, sizeof date, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec);
    const char *user = getenv("USER");
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session", session ? session : "",
                     "username", user && *user ? user : "dml", "date", date, "msg_type", msg_type, "version",
                     "5.3");
}

json_t *kjson_text(const char *text, size_t n)
{
    StrBuf b;
    sb_init(&b);
    size_t i = 0;
    while (i < n) {
        int32_t cp;
        size_t k = diag_char(text + i, n - i, &cp);
        if (cp < 0)
            sb_puts(&b, "\xef\xbf\xbd");
        else
            sb_putn(&b, text + i, k);
        i += k;
    }
    json_t *j = b.oom ? NULL : json_stringn(b.p ? b.p : "", b.len);
    sb_free(&b);
    return j;
}
