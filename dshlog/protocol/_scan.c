/*
 * dshlog.protocol._scan: one pass over a JSON text for what the reader's admission
 * rules need beyond what orjson and msgspec decide (see protocol/jsjson.py, "Reading").
 *
 * The text is known to be well-formed JSON (a parser accepted it) when the answer is
 * used, so strings are skipped with memchr to their closing quote and only the bytes
 * outside strings are looked at one by one: brackets (nesting depth) and number tokens
 * (a "-" that may be -0.0, a number that may overflow a double, an integer that may not fit
 * 64 bits).  Each flag says "may":
 * a set flag sends the text to the exact Python check, a clear flag is certain.
 *
 * valid_utf8 answers what bytes.decode("utf-8") would, without making the str.
 *
 * Built as an optional extension: where it is not built, jsjson.py falls back to its
 * Python checks, which decide the same (tests/test_scan.py proves both on the same texts).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define F_DEEP 1       /* nesting deeper than max_depth (exact for well-formed text) */
#define F_NEG_ZERO 2   /* a negative number token that may read as -0.0 */
#define F_BIG_NUMBER 4 /* a number token that may overflow a double (3+ exponent digits, 200+ digits) */
#define F_WIDE_INT 8   /* an integer token that may not fit 64 bits (19+ digits, no fraction or exponent) */

static int
scan_bytes(const unsigned char *p, const unsigned char *end, Py_ssize_t max_depth)
{
    Py_ssize_t depth = 0;
    int flags = 0;
    while (p < end) {
        unsigned char c = *p;
        if (c == '"') {
            const unsigned char *start = p + 1, *q = start;
            for (;;) {
                q = memchr(q, '"', (size_t)(end - q));
                if (q == NULL) {
                    return flags; /* unterminated: not well-formed text, nothing more to say */
                }
                const unsigned char *b = q;
                while (b > start && b[-1] == '\\') {
                    b--;
                }
                if (((q - b) & 1) == 0) {
                    break; /* an even run of backslashes: this quote ends the string */
                }
                q++;
            }
            p = q + 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                flags |= F_DEEP;
            }
            p++;
        } else if (c == ']' || c == '}') {
            depth--;
            p++;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            int negative = c == '-', nonzero = 0, exp_negative = 0, fraction = 0, exponent = 0;
            Py_ssize_t digits = 0, exp_digits = 0;
            if (negative) {
                p++;
            }
            while (p < end && ((*p >= '0' && *p <= '9') || *p == '.')) {
                if (*p != '.') {
                    digits++;
                    nonzero |= *p != '0';
                } else {
                    fraction = 1;
                }
                p++;
            }
            if (p < end && (*p == 'e' || *p == 'E')) {
                exponent = 1;
                p++;
                if (p < end && (*p == '+' || *p == '-')) {
                    exp_negative = *p == '-';
                    p++;
                }
                while (p < end && *p == '0') {
                    p++; /* leading zeros do not widen an exponent */
                }
                while (p < end && *p >= '0' && *p <= '9') {
                    exp_digits++;
                    p++;
                }
            }
            /* -0.0 needs a zero mantissa, or an underflow: a negative exponent, or so many
               digits that leading zeros can reach below the smallest double (200 digits with
               no negative exponent are still at least 1e-199) */
            if (negative && (!nonzero || exp_negative || digits >= 200)) {
                flags |= F_NEG_ZERO;
            }
            /* below 3 exponent digits and 200 digits a number is under 1e298: finite */
            if (exp_digits >= 3 || digits >= 200) {
                flags |= F_BIG_NUMBER;
            }
            /* an integer of up to 18 digits is inside [-2**63, 2**64): msgspec reads it as int64 or uint64 */
            if (digits >= 19 && !fraction && !exponent) {
                flags |= F_WIDE_INT;
            }
        } else {
            p++;
        }
    }
    return flags;
}

/* Whether the bytes are UTF-8 as Python's strict codec reads it (RFC 3629: no overlong form,
   no surrogate, nothing above U+10FFFF), without making the str. */
static int
utf8_ok(const unsigned char *p, const unsigned char *end)
{
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        Py_ssize_t n;
        unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            if (c == 0xE0) {
                lo = 0xA0; /* overlong below U+0800 */
            } else if (c == 0xED) {
                hi = 0x9F; /* U+D800..U+DFFF, the surrogates */
            }
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            if (c == 0xF0) {
                lo = 0x90; /* overlong below U+10000 */
            } else if (c == 0xF4) {
                hi = 0x8F; /* above U+10FFFF */
            }
        } else {
            return 0; /* a continuation byte first, C0/C1 (overlong), F5..FF */
        }
        if (end - p <= n || p[1] < lo || p[1] > hi) {
            return 0;
        }
        for (Py_ssize_t i = 2; i <= n; i++) {
            if (p[i] < 0x80 || p[i] > 0xBF) {
                return 0;
            }
        }
        p += n + 1;
    }
    return 1;
}

static PyObject *
valid_utf8(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    int ok;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ok = utf8_ok((const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

static PyObject *
scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t max_depth;
    int flags;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "scan(data, max_depth) takes two arguments");
        return NULL;
    }
    max_depth = PyLong_AsSsize_t(args[1]);
    if (max_depth == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    flags = scan_bytes((const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len, max_depth);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromLong(flags);
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "scan(data, max_depth) -> flags: DEEP, NEG_ZERO, BIG_NUMBER, WIDE_INT of a well-formed JSON text."},
    {"valid_utf8", (PyCFunction)valid_utf8, METH_O,
     "valid_utf8(data) -> whether data.decode('utf-8') succeeds, without decoding."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "One pass over a JSON text for the reader's admission rules.", -1, methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "DEEP", F_DEEP) < 0 || PyModule_AddIntConstant(m, "NEG_ZERO", F_NEG_ZERO) < 0
        || PyModule_AddIntConstant(m, "BIG_NUMBER", F_BIG_NUMBER) < 0
        || PyModule_AddIntConstant(m, "WIDE_INT", F_WIDE_INT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
