// exec_train_data.cpp — the input streams of a training session (--data):
// one .npy file per model input, as numpy.save writes it (format 1.0, 2.0 or
// 3.0, little-endian, C order), holding an array of shape (K, *input shape)
// of the input's dtype.  The header and the file size are checked when the
// session opens (a clear message naming the file and what was expected);
// each step reads one item.
#include <torch/script.h>

#include <cstdio>
#include <fstream>

#include "exec_internal.h"

namespace rkx {

static const std::map<std::string, at::ScalarType> &npy_types() {
    static const std::map<std::string, at::ScalarType> m = {
        {"<f4", at::kFloat}, {"<f8", at::kDouble}, {"<f2", at::kHalf}, {"<i8", at::kLong}, {"<i4", at::kInt},
        {"<i2", at::kShort}, {"|i1", at::kChar},   {"|u1", at::kByte}, {"|b1", at::kBool}};
    return m;
}

static std::string shape_text(const std::vector<int64_t> &s) {
    std::string t = "(";
    for (size_t i = 0; i < s.size(); i++) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + (s.size() == 1 ? ",)" : ")");
}

// The value of 'key' in the header dict: the text after "'key':" up to the
// matching end (a quoted string, a tuple, or a word).
static std::string header_field(const std::string &path, const std::string &h, const std::string &key) {
    size_t k = h.find("'" + key + "'");
    if (k == std::string::npos) fail(RK_EINPUT, path + ": .npy header has no '" + key + "' (header: " + h + ")");
    size_t c = h.find(':', k);
    if (c == std::string::npos) fail(RK_EINPUT, path + ": .npy header: no ':' after '" + key + "'");
    size_t b = h.find_first_not_of(' ', c + 1);
    if (b == std::string::npos) fail(RK_EINPUT, path + ": .npy header ends after '" + key + "'");
    size_t e;
    if (h[b] == '\'') e = h.find('\'', b + 1);
    else if (h[b] == '(') e = h.find(')', b);
    else e = h.find_first_of(",}", b) - 1;
    if (e == std::string::npos || e < b) fail(RK_EINPUT, path + ": .npy header: bad value of '" + key + "'");
    return h.substr(b, e - b + 1);
}

NpyStream npy_open(const std::string &path, const at::Tensor &like, int input) {
    std::string what = "input " + std::to_string(input) + " (" + shape_text(like.sizes().vec()) + " " +
                       c10::toString(like.scalar_type()) + ")";
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(RK_EINPUT, path + ": cannot open the data file for " + what);
    char pre[10];
    f.read(pre, 10);
    if (f.gcount() < 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
        fail(RK_EINPUT, path + ": not a .npy file (numpy.save's format, starting with \\x93NUMPY)");
    int major = (unsigned char)pre[6];
    uint64_t hlen, off;
    if (major == 1) {
        hlen = (unsigned char)pre[8] | ((unsigned)(unsigned char)pre[9] << 8);
        off = 10;
    } else if (major == 2 || major == 3) {
        char more[2];
        f.read(more, 2);
        if (f.gcount() < 2) fail(RK_EINPUT, path + ": .npy file truncated in its header");
        hlen = (uint64_t)(unsigned char)pre[8] | ((uint64_t)(unsigned char)pre[9] << 8) |
               ((uint64_t)(unsigned char)more[0] << 16) | ((uint64_t)(unsigned char)more[1] << 24);
        off = 12;
    } else {
        fail(RK_EINPUT, path + ": .npy format version " + std::to_string(major) + " (expected 1, 2 or 3)");
    }
    if (hlen > (1u << 20)) fail(RK_EINPUT, path + ": .npy header of " + std::to_string(hlen) + " bytes");
    std::string h(hlen, '\0');
    f.read(&h[0], (std::streamsize)hlen);
    if ((uint64_t)f.gcount() < hlen) fail(RK_EINPUT, path + ": .npy file truncated in its header");
    off += hlen;
    std::string descr = header_field(path, h, "descr");
    std::string fortran = header_field(path, h, "fortran_order");
    std::string shape = header_field(path, h, "shape");
    if (descr.size() < 2) fail(RK_EINPUT, path + ": .npy header: bad descr " + descr);
    descr = descr.substr(1, descr.size() - 2);
    auto ty = npy_types().find(descr);
    if (ty == npy_types().end())
        fail(RK_EINPUT, path + ": dtype '" + descr + "' is not supported (little-endian <f4, <f8, <f2, <i8, <i4, "
                        "<i2, |i1, |u1, |b1)");
    if (fortran != "False") fail(RK_EINPUT, path + ": array in Fortran order; save a C-order array");
    NpyStream s;
    s.path = path;
    s.dtype = ty->second;
    std::vector<int64_t> dims;
    for (size_t i = 1; i + 1 < shape.size();) {
        size_t j = shape.find_first_not_of(" ,", i);
        if (j == std::string::npos || j >= shape.size() - 1) break;
        size_t e = j;
        while (e < shape.size() && isdigit((unsigned char)shape[e])) e++;
        if (e == j) fail(RK_EINPUT, path + ": .npy header: bad shape " + shape);
        dims.push_back(std::stoll(shape.substr(j, e - j)));
        i = e;
    }
    std::vector<int64_t> want = like.sizes().vec();
    std::string expected = "expected shape (K, " + shape_text(want).substr(1) + " of " + c10::toString(like.scalar_type()) +
                           " for " + what;
    if (s.dtype != like.scalar_type())
        fail(RK_EINPUT, path + ": dtype " + c10::toString(s.dtype) + " ('" + descr + "'), " + expected);
    if (dims.size() != want.size() + 1 || !std::equal(want.begin(), want.end(), dims.begin() + 1))
        fail(RK_EINPUT, path + ": shape " + shape_text(dims) + ", " + expected);
    if (dims[0] < 1) fail(RK_EINPUT, path + ": holds no item (shape " + shape_text(dims) + ")");
    s.items = dims[0];
    s.item_shape = want;
    s.item_bytes = like.numel() * (int64_t)c10::elementSize(s.dtype);
    s.offset = off;
    f.seekg(0, std::ios::end);
    uint64_t size = (uint64_t)f.tellg();
    uint64_t need = off + (uint64_t)s.items * (uint64_t)s.item_bytes;
    if (size < need)
        fail(RK_EINPUT, path + ": truncated: " + std::to_string(size) + " bytes, the header's shape " +
                            shape_text(dims) + " needs " + std::to_string(need));
    if (size > need)
        fail(RK_EINPUT, path + ": " + std::to_string(size - need) + " bytes after the array its header describes");
    return s;
}

at::Tensor npy_read(const NpyStream &s, int64_t i) {
    at::Tensor t = at::empty(s.item_shape, at::TensorOptions().dtype(s.dtype));
    std::ifstream f(s.path, std::ios::binary);
    if (!f) fail(RK_EINPUT, s.path + ": cannot open the data file");
    f.seekg((std::streamoff)(s.offset + (uint64_t)(i % s.items) * (uint64_t)s.item_bytes));
    f.read(static_cast<char *>(t.data_ptr()), s.item_bytes);
    if (f.gcount() != s.item_bytes) fail(RK_EINPUT, s.path + ": truncated while reading item " + std::to_string(i % s.items));
    return t;
}

} // namespace rkx
