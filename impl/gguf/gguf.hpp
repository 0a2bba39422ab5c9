// GGUF (version 3), the file format of llama.cpp / ggml: writer and reader
// (contracts/q4k/q4k-gemv-v1.yaml, GGUF obligations).
//
//   file   = header kv* tensor_info* pad data
//   header = "GGUF" u32:version u64:n_tensors u64:n_kv              (little-endian)
//   kv     = string:key u32:type value
//   value  = u8 | i8 | u16 | i16 | u32 | i32 | f32 | bool(u8) | string | u64 | i64 | f64
//          | array: u32:elem_type u64:count value*count             (no nested arrays)
//   string = u64:length bytes                                        (UTF-8, no terminator)
//   tensor_info = string:name u32:n_dims u64:ne[n_dims] u32:ggml_type u64:offset
//   pad    = zero bytes up to a multiple of `general.alignment` (u32, default 32)
//   data   = each tensor at data_start + offset (offset a multiple of the
//            alignment), padded with zeros to the alignment, in info order.
// ne[0] is the innermost (contiguous) dimension: a rows x cols weight matrix
// is ne = {cols, rows}, as llama.cpp writes it.
//
// The reader maps the file and checks every count, length and offset against
// the file size before using it: a malformed file raises popper::Error naming
// the byte offset, never a crash.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace popper::gguf {

enum class ValueType : std::uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* to_string(ValueType t);

// One metadata value. Scalars are held widened (unsigned -> u64, signed -> i64,
// float -> double, exactly) and written back at their declared type.
struct Value {
  ValueType type = ValueType::U32;
  ValueType elem = ValueType::U8;  // element type when type == Array
  std::variant<std::uint64_t, std::int64_t, double, std::string> scalar;
  std::vector<Value> items;  // type == Array

  static Value u8(std::uint8_t v), i8(std::int8_t v), u16(std::uint16_t v), i16(std::int16_t v);
  static Value u32(std::uint32_t v), i32(std::int32_t v), u64(std::uint64_t v), i64(std::int64_t v);
  static Value f32(float v), f64(double v), boolean(bool v), str(std::string v);
  // All items must share one non-array type.
  static Value array(ValueType elem, std::vector<Value> items);
  static Value strings(const std::vector<std::string>& v);
  static Value i32s(const std::vector<std::int32_t>& v);
  static Value f32s(const std::vector<float>& v);

  std::uint64_t as_u64() const;  // unsigned and bool types
  std::int64_t as_i64() const;   // any integer type
  double as_f64() const;         // any numeric type
  const std::string& as_str() const;
  bool operator==(const Value&) const = default;
};

// ggml tensor types popper knows the storage size of (ids as in ggml.h).
enum class TensorType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};
struct TypeTraits {
  const char* name;
  std::uint32_t block_elements;  // elements per block along ne[0]
  std::uint32_t block_bytes;     // bytes per block
};
// nullptr for a type popper does not know.
const TypeTraits* traits(std::uint32_t ggml_type);
// Bytes of a tensor of that type and shape; throws popper::Error for an
// unknown type, ne[0] not a multiple of the block, or overflow.
std::uint64_t tensor_bytes(std::uint32_t ggml_type, std::span<const std::uint64_t> ne);

inline constexpr std::uint32_t kVersion = 3;
inline constexpr std::uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

// Builds a GGUF file. Keys keep insertion order; tensor data is borrowed
// (spans must stay valid until write()).
class Writer {
 public:
  // Throws InvalidArgument on a duplicate or empty key, or a nested array.
  // `general.alignment` (u32, a power of two) sets the data alignment.
  void set(const std::string& key, Value v);
  // Throws InvalidArgument on a duplicate name, 0 or > 4 dims, or data whose
  // size is not tensor_bytes(type, ne).
  void add_tensor(const std::string& name, std::uint32_t ggml_type, std::vector<std::uint64_t> ne,
                  std::span<const std::byte> data);
  // The whole file in memory / written atomically (temp file + rename).
  std::vector<std::byte> bytes() const;
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    std::uint32_t type;
    std::vector<std::uint64_t> ne;
    std::span<const std::byte> data;
  };
  std::uint32_t alignment() const;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<Tensor> tensors_;
};

struct TensorInfo {
  std::string name;
  std::vector<std::uint64_t> ne;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;  // relative to the data section
  std::uint64_t bytes = 0;
  std::span<const std::byte> data;  // inside the mapped file
};

// A GGUF file mapped read-only. Move-only; the spans it hands out live as long as it.
class File {
 public:
  static File open(const std::string& path);
  // Parses a buffer the caller keeps alive (tests, fuzzing).
  static File parse(std::span<const std::byte> bytes, const std::string& what = "<memory>");
  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(const std::string& key) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* tensor(const std::string& name) const;

 private:
  File() = default;
  struct Mapping;
  std::unique_ptr<Mapping> map_;
  std::uint32_t version_ = 0, alignment_ = kDefaultAlignment;
  std::uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace popper::gguf
