/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the Jupyter kernel's message decoder
 * (cli/kernel_msg.c), which reads whatever a client sends to the kernel's
 * sockets. The input is a multipart message: its frames are the runs of
 * bytes between 0xFF bytes (a byte JSON text never holds). When the first
 * byte is odd, the frame after "<IDS|MSG>" is replaced by the right
 * signature of the four after it, so the fuzzer gets past the HMAC check
 * to the JSON; otherwise the signature is whatever the input says (and
 * almost always refused). A message that decodes must encode and decode
 * again to the same JSON; a crash, leak or sanitizer report is a bug.
 *
 * Build and run: make fuzz; see tests/fuzz/README.md. */
#include "../../cli/kernel_msg.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char key[] = "fuzz-key";

static void sign_into(KFrame *sig, const KFrame *parts, unsigned char *hexbuf)
{
    size_t total = 0;
    for (int i = 0; i < 4; i++)
        total += parts[i].n;
    unsigned char *buf = malloc(total + 1);
    if (!buf)
        abort();
    size_t at = 0;
    for (int i = 0; i < 4; i++) {
        if (parts[i].n)
            memcpy(buf + at, parts[i].p, parts[i].n);
        at += parts[i].n;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!HMAC(EVP_sha256(), key, (int)sizeof key - 1, buf, total, md, &mdlen))
        abort();
    free(buf);
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < mdlen; i++) {
        hexbuf[2 * i] = (unsigned char)digits[md[i] >> 4];
        hexbuf[2 * i + 1] = (unsigned char)digits[md[i] & 15];
    }
    sig->p = hexbuf;
    sig->n = 2 * mdlen;
}

static bool same_json(json_t *a, json_t *b)
{
    return json_equal(a, b) == 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bool fix_sig = data[0] & 1;
    data++;
    size--;
    KFrame f[KMSG_MAX_FRAMES + 2];
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && n < KMSG_MAX_FRAMES + 1; i++)
        if (i == size || data[i] == 0xFF) {
            f[n].p = (unsigned char *)data + start;     /* read only */
            f[n].n = i - start;
            n++;
            start = i + 1;
        }
    unsigned char hex[2 * EVP_MAX_MD_SIZE];
    if (fix_sig) {
        for (int d = 0; d + 6 <= n; d++)
            if (f[d].n == 9 && memcmp(f[d].p, "<IDS|MSG>", 9) == 0) {
                sign_into(&f[d + 1], &f[d + 2], hex);
                break;
            }
    }
    KKey k = {key, sizeof key - 1};
    KMsg m;
    char why[256];
    if (!kmsg_decode(f, n, k, &m, why, sizeof why)) {
        if (!why[0])
            abort();        /* a refusal always says why */
        return 0;
    }
    KFrame *out;
    int nout;
    if (!kmsg_encode(&m, k, &out, &nout))
        abort();
    KMsg again;
    if (!kmsg_decode(out, nout, k, &again, why, sizeof why))
        abort();
    if (again.nids != m.nids || strcmp(again.type, m.type) != 0 || !same_json(again.header, m.header) ||
        !same_json(again.parent, m.parent) || !same_json(again.metadata, m.metadata) ||
        !same_json(again.content, m.content))
        abort();
    for (int i = 0; i < m.nids; i++)
        if (again.ids[i].n != m.ids[i].n || (m.ids[i].n && memcmp(again.ids[i].p, m.ids[i].p, m.ids[i].n) != 0))
            abort();
    kmsg_free(&again);
    kframes_free(out, nout);
    kmsg_free(&m);
    return 0;
}
