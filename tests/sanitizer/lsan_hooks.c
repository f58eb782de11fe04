/* SPDX-License-Identifier: Apache-2.0
 * LeakSanitizer's defaults, linked only into AddressSanitizer builds
 * (make SANITIZE=address..., the fuzz targets): the product never carries
 * them.
 *
 * fontconfig, which cairo's text (plot(), builtins/plot_cairo.c) goes
 * through, keeps the fonts it has looked up in caches that live until the
 * process ends and that LeakSanitizer cannot see as reachable. Only FcFini()
 * frees them, and calling it while cairo still holds fonts aborts, so these
 * are suppressed instead; leaks in our own code are still reported.
 * LeakSanitizer looks these functions up by name. Not listing the
 * suppressions used keeps stderr as the tests expect it; LSAN_OPTIONS still
 * overrides. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig.so\n";
}
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}
