// GGUF writer (layout in gguf.hpp): header, metadata, tensor infos, padding,
// data; each tensor at an aligned offset and zero-padded to the alignment, as
// ggml's own writer lays it out.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "impl/gguf/gguf.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::gguf {
namespace {

using Sink = std::function<void(const void*, std::size_t)>;

template <class T>
void put(const Sink& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out(&v, sizeof v);  // x86-64 and every GGUF producer are little-endian
}

void put_string(const Sink& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out(s.data(), s.size());
}

void put_value_body(const Sink& out, const Value& v) {
  switch (v.type) {
    case ValueType::U8: put<std::uint8_t>(out, static_cast<std::uint8_t>(v.as_u64())); break;
    case ValueType::I8: put<std::int8_t>(out, static_cast<std::int8_t>(v.as_i64())); break;
    case ValueType::U16: put<std::uint16_t>(out, static_cast<std::uint16_t>(v.as_u64())); break;
    case ValueType::I16: put<std::int16_t>(out, static_cast<std::int16_t>(v.as_i64())); break;
    case ValueType::U32: put<std::uint32_t>(out, static_cast<std::uint32_t>(v.as_u64())); break;
    case ValueType::I32: put<std::int32_t>(out, static_cast<std::int32_t>(v.as_i64())); break;
    case ValueType::F32: put<float>(out, static_cast<float>(v.as_f64())); break;
    case ValueType::Bool: put<std::uint8_t>(out, v.as_u64() ? 1 : 0); break;
    case ValueType::String: put_string(out, v.as_str()); break;
    case ValueType::U64: put<std::uint64_t>(out, v.as_u64()); break;
    case ValueType::I64: put<std::int64_t>(out, v.as_i64()); break;
    case ValueType::F64: put<double>(out, v.as_f64()); break;
    case ValueType::Array:
      put<std::uint32_t>(out, static_cast<std::uint32_t>(v.elem));
      put<std::uint64_t>(out, v.items.size());
      for (const auto& item : v.items) put_value_body(out, item);
      break;
  }
}

std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

// A value must fit its declared type: checked when it is set, not when written.
void check_value(const std::string& key, const Value& v) {
  auto fits_u = [&](std::uint64_t max) {
    if (v.as_u64() > max) throw InvalidArgument("gguf key '" + key + "': value exceeds " + to_string(v.type));
  };
  auto fits_i = [&](std::int64_t lo, std::int64_t hi) {
    const std::int64_t x = v.as_i64();
    if (x < lo || x > hi) throw InvalidArgument("gguf key '" + key + "': value exceeds " + to_string(v.type));
  };
  switch (v.type) {
    case ValueType::U8: fits_u(0xFF); break;
    case ValueType::U16: fits_u(0xFFFF); break;
    case ValueType::U32: fits_u(0xFFFFFFFFu); break;
    case ValueType::Bool: fits_u(1); break;
    case ValueType::U64: (void)v.as_u64(); break;
    case ValueType::I8: fits_i(-128, 127); break;
    case ValueType::I16: fits_i(-32768, 32767); break;
    case ValueType::I32: fits_i(INT32_MIN, INT32_MAX); break;
    case ValueType::I64: (void)v.as_i64(); break;
    case ValueType::F32:
    case ValueType::F64: (void)v.as_f64(); break;
    case ValueType::String: (void)v.as_str(); break;
    case ValueType::Array:
      if (v.elem == ValueType::Array) throw InvalidArgument("gguf key '" + key + "': nested arrays are not supported");
      for (const auto& item : v.items) {
        if (item.type != v.elem) throw InvalidArgument("gguf key '" + key + "': array items of mixed types");
        check_value(key, item);
      }
      break;
  }
}

}  // namespace

void Writer::set(const std::string& key, Value v) {
  if (key.empty()) throw InvalidArgument("gguf: empty metadata key");
  for (const auto& kv : kv_)
    if (kv.first == key) throw InvalidArgument("gguf: duplicate metadata key '" + key + "'");
  check_value(key, v);
  if (key == "general.alignment") {
    if (v.type != ValueType::U32) throw InvalidArgument("gguf: general.alignment must be u32");
    const std::uint64_t a = v.as_u64();
    if (a == 0 || (a & (a - 1)) != 0) throw InvalidArgument("gguf: general.alignment must be a power of two");
  }
  kv_.emplace_back(key, std::move(v));
}

void Writer::add_tensor(const std::string& name, std::uint32_t ggml_type, std::vector<std::uint64_t> ne,
                        std::span<const std::byte> data) {
  if (name.empty()) throw InvalidArgument("gguf: empty tensor name");
  for (const auto& t : tensors_)
    if (t.name == name) throw InvalidArgument("gguf: duplicate tensor name '" + name + "'");
  std::uint64_t need = 0;
  try {
    need = tensor_bytes(ggml_type, ne);
  } catch (const Error& e) {
    throw InvalidArgument("gguf tensor '" + name + "': " + e.what());
  }
  if (data.size() != need)
    throw InvalidArgument("gguf tensor '" + name + "': " + std::to_string(data.size()) +
                          " bytes of data, its type and shape need " + std::to_string(need));
  tensors_.push_back({name, ggml_type, std::move(ne), data});
}

std::uint32_t Writer::alignment() const {
  for (const auto& kv : kv_)
    if (kv.first == "general.alignment") return static_cast<std::uint32_t>(kv.second.as_u64());
  return kDefaultAlignment;
}

namespace {

void emit(const Sink& out, std::uint32_t align, const std::vector<std::pair<std::string, Value>>& kv,
          const auto& tensors) {
  std::uint64_t written = 0;
  const Sink counted = [&](const void* p, std::size_t n) {
    out(p, n);
    written += n;
  };
  static const char zeros[64] = {};
  auto pad_to = [&](std::uint64_t target) {
    while (written < target)
      counted(zeros, static_cast<std::size_t>(std::min<std::uint64_t>(sizeof zeros, target - written)));
  };
  counted("GGUF", 4);
  put<std::uint32_t>(counted, kVersion);
  put<std::uint64_t>(counted, tensors.size());
  put<std::uint64_t>(counted, kv.size());
  for (const auto& [key, v] : kv) {
    put_string(counted, key);
    put<std::uint32_t>(counted, static_cast<std::uint32_t>(v.type));
    put_value_body(counted, v);
  }
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    put_string(counted, t.name);
    put<std::uint32_t>(counted, static_cast<std::uint32_t>(t.ne.size()));
    for (auto d : t.ne) put<std::uint64_t>(counted, d);
    put<std::uint32_t>(counted, t.type);
    put<std::uint64_t>(counted, offset);
    offset = align_up(offset + t.data.size(), align);
  }
  // Mutation point (gguf-writer-no-data-padding): no alignment before the data section.
  if (!POPPER_MUTANT("gguf-writer-no-data-padding")) pad_to(align_up(written, align));
  const std::uint64_t data_start = written;
  offset = 0;
  for (const auto& t : tensors) {
    pad_to(data_start + offset);
    counted(t.data.data(), t.data.size());
    offset = align_up(offset + t.data.size(), align);
  }
  pad_to(data_start + offset);
}

}  // namespace

std::vector<std::byte> Writer::bytes() const {
  std::vector<std::byte> buf;
  emit(
      [&](const void* p, std::size_t n) {
        const auto* b = static_cast<const std::byte*>(p);
        buf.insert(buf.end(), b, b + n);
      },
      alignment(), kv_, tensors_);
  return buf;
}

void Writer::write(const std::string& path) const {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error("gguf: cannot create " + tmp + ": " + std::strerror(errno));
  bool ok = true;
  try {
    emit(
        [&](const void* p, std::size_t n) {
          if (ok && std::fwrite(p, 1, n, f) != n) ok = false;
        },
        alignment(), kv_, tensors_);
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error("gguf: cannot write " + path + ": " + why);
  }
}

}  // namespace popper::gguf
