// GGUF reader (layout in gguf.hpp). Every count, length and offset is checked
// against the bytes that remain before it is used, so a truncated or hostile
// file raises popper::Error with the byte offset instead of reading past the end.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include "impl/gguf/gguf.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::gguf {

struct File::Mapping {
  void* addr = nullptr;
  std::size_t size = 0;
  ~Mapping() {
    if (addr && size) ::munmap(addr, size);
  }
};

namespace {

class Cursor {
 public:
  Cursor(std::span<const std::byte> b, std::string what) : b_(b), what_(std::move(what)) {}
  std::uint64_t pos() const { return pos_; }
  std::uint64_t remaining() const { return b_.size() - pos_; }
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error("gguf: " + what_ + ": at byte " + std::to_string(pos_) + ": " + msg);
  }
  void need(std::uint64_t n, const char* item) const {
    if (n > remaining())
      fail(std::string("truncated: ") + item + " needs " + std::to_string(n) + " bytes, " +
           std::to_string(remaining()) + " remain");
  }
  template <class T>
  T get(const char* item) {
    need(sizeof(T), item);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string string(const char* item) {
    const auto n = get<std::uint64_t>(item);
    need(n, item);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), static_cast<std::size_t>(n));
    pos_ += n;
    return s;
  }

 private:
  std::span<const std::byte> b_;
  std::string what_;
  std::uint64_t pos_ = 0;
};

// Smallest encoding of one value of type t (bounds array counts before allocating).
std::uint64_t min_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::Bool: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
    case ValueType::String: return 8;
    case ValueType::Array: return 12;
  }
  return 1;
}

bool known_type(std::uint32_t t) { return t <= static_cast<std::uint32_t>(ValueType::F64); }

Value read_value(Cursor& c, ValueType t, bool in_array) {
  switch (t) {
    case ValueType::U8: return Value::u8(c.get<std::uint8_t>("u8"));
    case ValueType::I8: return Value::i8(c.get<std::int8_t>("i8"));
    case ValueType::U16: return Value::u16(c.get<std::uint16_t>("u16"));
    case ValueType::I16: return Value::i16(c.get<std::int16_t>("i16"));
    case ValueType::U32: return Value::u32(c.get<std::uint32_t>("u32"));
    case ValueType::I32: return Value::i32(c.get<std::int32_t>("i32"));
    case ValueType::F32: return Value::f32(c.get<float>("f32"));
    case ValueType::Bool: {
      const auto b = c.get<std::uint8_t>("bool");
      if (b > 1) c.fail("bool value " + std::to_string(b) + " is neither 0 nor 1");
      return Value::boolean(b != 0);
    }
    case ValueType::String: return Value::str(c.string("string"));
    case ValueType::U64: return Value::u64(c.get<std::uint64_t>("u64"));
    case ValueType::I64: return Value::i64(c.get<std::int64_t>("i64"));
    case ValueType::F64: return Value::f64(c.get<double>("f64"));
    case ValueType::Array: {
      if (in_array) c.fail("nested arrays are not supported");
      const auto et = c.get<std::uint32_t>("array type");
      if (!known_type(et)) c.fail("unknown array element type " + std::to_string(et));
      const auto elem = static_cast<ValueType>(et);
      if (elem == ValueType::Array) c.fail("nested arrays are not supported");
      const auto n = c.get<std::uint64_t>("array count");
      // Mutation point (gguf-reader-unchecked-array): allocate before checking the items fit.
      if (!POPPER_MUTANT("gguf-reader-unchecked-array") && n > c.remaining() / min_size(elem))
        c.fail("array of " + std::to_string(n) + " items cannot fit in the file");
      std::vector<Value> items;
      items.reserve(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < n; ++i) items.push_back(read_value(c, elem, true));
      Value v;
      v.type = ValueType::Array;
      v.elem = elem;
      v.items = std::move(items);
      return v;
    }
  }
  c.fail("unknown value type");
}

}  // namespace

File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("gguf: cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw Error("gguf: cannot stat " + path + ": " + why);
  }
  auto map = std::make_unique<Mapping>();
  map->size = static_cast<std::size_t>(st.st_size);
  if (map->size > 0) {
    map->addr = ::mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map->addr == MAP_FAILED) {
      map->addr = nullptr;
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw Error("gguf: cannot map " + path + ": " + why);
    }
  }
  ::close(fd);
  File f = parse(std::span<const std::byte>(static_cast<const std::byte*>(map->addr), map->size), path);
  f.map_ = std::move(map);
  return f;
}

File File::parse(std::span<const std::byte> bytes, const std::string& what) {
  File f;
  Cursor c(bytes, what);
  c.need(4, "magic");
  if (std::memcmp(bytes.data(), "GGUF", 4) != 0) c.fail("not a GGUF file (magic is not 'GGUF')");
  (void)c.get<std::uint32_t>("magic");
  f.version_ = c.get<std::uint32_t>("version");
  if (f.version_ < 2 || f.version_ > 3)
    c.fail("GGUF version " + std::to_string(f.version_) + " is not supported (2 or 3)");
  const auto n_tensors = c.get<std::uint64_t>("tensor count");
  const auto n_kv = c.get<std::uint64_t>("metadata count");
  if (n_kv > c.remaining() / 13) c.fail(std::to_string(n_kv) + " metadata entries cannot fit in the file");
  std::set<std::string> keys;
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.string("metadata key");
    if (key.empty()) c.fail("empty metadata key");
    if (!keys.insert(key).second) c.fail("duplicate metadata key '" + key + "'");
    const auto t = c.get<std::uint32_t>("value type");
    if (!known_type(t)) c.fail("key '" + key + "': unknown value type " + std::to_string(t));
    Value v = read_value(c, static_cast<ValueType>(t), false);
    if (key == "general.alignment") {
      if (v.type != ValueType::U32) c.fail("general.alignment must be u32");
      const std::uint64_t a = v.as_u64();
      if (a == 0 || (a & (a - 1)) != 0) c.fail("general.alignment " + std::to_string(a) + " is not a power of two");
      f.alignment_ = static_cast<std::uint32_t>(a);
    }
    f.kv_.emplace_back(std::move(key), std::move(v));
  }
  if (n_tensors > c.remaining() / 24) c.fail(std::to_string(n_tensors) + " tensor infos cannot fit in the file");
  std::set<std::string> names;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = c.string("tensor name");
    if (!names.insert(t.name).second) c.fail("duplicate tensor name '" + t.name + "'");
    const auto nd = c.get<std::uint32_t>("n_dims");
    if (nd == 0 || nd > static_cast<std::uint32_t>(kMaxDims))
      c.fail("tensor '" + t.name + "' has " + std::to_string(nd) + " dimensions (1 to 4 allowed)");
    for (std::uint32_t d = 0; d < nd; ++d) t.ne.push_back(c.get<std::uint64_t>("dimension"));
    t.type = c.get<std::uint32_t>("tensor type");
    t.offset = c.get<std::uint64_t>("tensor offset");
    try {
      t.bytes = tensor_bytes(t.type, t.ne);
    } catch (const Error& e) {
      c.fail("tensor '" + t.name + "': " + e.what());
    }
    if (t.offset % f.alignment_ != 0)
      c.fail("tensor '" + t.name + "' offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
             std::to_string(f.alignment_));
    f.tensors_.push_back(std::move(t));
  }
  const std::uint64_t a = f.alignment_;
  f.data_offset_ = (c.pos() + a - 1) / a * a;
  if (f.data_offset_ > bytes.size() && !f.tensors_.empty()) c.fail("the data section starts past the end of the file");
  const std::uint64_t data_size = bytes.size() >= f.data_offset_ ? bytes.size() - f.data_offset_ : 0;
  for (auto& t : f.tensors_) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      throw Error("gguf: " + what + ": tensor '" + t.name + "' [" + std::to_string(t.offset) + ", +" +
                  std::to_string(t.bytes) + ") lies outside the data section of " + std::to_string(data_size) +
                  " bytes");
    t.data = bytes.subspan(static_cast<std::size_t>(f.data_offset_ + t.offset), static_cast<std::size_t>(t.bytes));
  }
  return f;
}

const Value* File::find(const std::string& key) const {
  for (const auto& kv : kv_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

const TensorInfo* File::tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace popper::gguf
