// GGUF metadata values and the ggml tensor-type size table.
#include <limits>
#include <string>

#include "impl/gguf/gguf.hpp"
#include "popper/error.hpp"

namespace popper::gguf {

const char* to_string(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::Bool: return "bool";
    case ValueType::String: return "string";
    case ValueType::Array: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "?";
}

namespace {
Value unsigned_value(ValueType t, std::uint64_t v) {
  Value x;
  x.type = t;
  x.scalar = v;
  return x;
}
Value signed_value(ValueType t, std::int64_t v) {
  Value x;
  x.type = t;
  x.scalar = v;
  return x;
}
}  // namespace

Value Value::u8(std::uint8_t v) { return unsigned_value(ValueType::U8, v); }
Value Value::u16(std::uint16_t v) { return unsigned_value(ValueType::U16, v); }
Value Value::u32(std::uint32_t v) { return unsigned_value(ValueType::U32, v); }
Value Value::u64(std::uint64_t v) { return unsigned_value(ValueType::U64, v); }
Value Value::boolean(bool v) { return unsigned_value(ValueType::Bool, v ? 1 : 0); }
Value Value::i8(std::int8_t v) { return signed_value(ValueType::I8, v); }
Value Value::i16(std::int16_t v) { return signed_value(ValueType::I16, v); }
Value Value::i32(std::int32_t v) { return signed_value(ValueType::I32, v); }
Value Value::i64(std::int64_t v) { return signed_value(ValueType::I64, v); }
Value Value::f32(float v) {
  Value x;
  x.type = ValueType::F32;
  x.scalar = static_cast<double>(v);
  return x;
}
Value Value::f64(double v) {
  Value x;
  x.type = ValueType::F64;
  x.scalar = v;
  return x;
}
Value Value::str(std::string v) {
  Value x;
  x.type = ValueType::String;
  x.scalar = std::move(v);
  return x;
}
Value Value::array(ValueType elem, std::vector<Value> items) {
  if (elem == ValueType::Array) throw InvalidArgument("gguf: nested arrays are not supported");
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].type != elem)
      throw InvalidArgument("gguf: array of " + std::string(to_string(elem)) + " has item " + std::to_string(i) +
                            " of type " + to_string(items[i].type));
  Value x;
  x.type = ValueType::Array;
  x.elem = elem;
  x.items = std::move(items);
  return x;
}
Value Value::strings(const std::vector<std::string>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (const auto& s : v) items.push_back(str(s));
  return array(ValueType::String, std::move(items));
}
Value Value::i32s(const std::vector<std::int32_t>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (auto e : v) items.push_back(i32(e));
  return array(ValueType::I32, std::move(items));
}
Value Value::f32s(const std::vector<float>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (auto e : v) items.push_back(f32(e));
  return array(ValueType::F32, std::move(items));
}

std::uint64_t Value::as_u64() const {
  if (const auto* p = std::get_if<std::uint64_t>(&scalar)) return *p;
  throw InvalidArgument(std::string("gguf: value of type ") + to_string(type) + " is not unsigned");
}
std::int64_t Value::as_i64() const {
  if (const auto* p = std::get_if<std::int64_t>(&scalar)) return *p;
  if (const auto* p = std::get_if<std::uint64_t>(&scalar);
      p && *p <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return static_cast<std::int64_t>(*p);
  throw InvalidArgument(std::string("gguf: value of type ") + to_string(type) + " is not an integer in int64 range");
}
double Value::as_f64() const {
  if (const auto* p = std::get_if<double>(&scalar)) return *p;
  if (const auto* p = std::get_if<std::int64_t>(&scalar)) return static_cast<double>(*p);
  if (const auto* p = std::get_if<std::uint64_t>(&scalar)) return static_cast<double>(*p);
  throw InvalidArgument(std::string("gguf: value of type ") + to_string(type) + " is not numeric");
}
const std::string& Value::as_str() const {
  if (const auto* p = std::get_if<std::string>(&scalar)) return *p;
  throw InvalidArgument(std::string("gguf: value of type ") + to_string(type) + " is not a string");
}

const TypeTraits* traits(std::uint32_t t) {
  // Block geometry from the GGUF specification (ggml's type_traits).
  static const struct {
    std::uint32_t id;
    TypeTraits tr;
  } table[] = {
      {0, {"f32", 1, 4}},       {1, {"f16", 1, 2}},       {2, {"q4_0", 32, 18}},    {3, {"q4_1", 32, 20}},
      {6, {"q5_0", 32, 22}},    {7, {"q5_1", 32, 24}},    {8, {"q8_0", 32, 34}},    {9, {"q8_1", 32, 36}},
      {10, {"q2_K", 256, 84}},  {11, {"q3_K", 256, 110}}, {12, {"q4_K", 256, 144}}, {13, {"q5_K", 256, 176}},
      {14, {"q6_K", 256, 210}}, {15, {"q8_K", 256, 292}}, {24, {"i8", 1, 1}},       {25, {"i16", 1, 2}},
      {26, {"i32", 1, 4}},      {27, {"i64", 1, 8}},      {28, {"f64", 1, 8}},      {30, {"bf16", 1, 2}},
  };
  for (const auto& e : table)
    if (e.id == t) return &e.tr;
  return nullptr;
}

std::uint64_t tensor_bytes(std::uint32_t ggml_type, std::span<const std::uint64_t> ne) {
  const TypeTraits* tr = traits(ggml_type);
  if (!tr) throw Error("gguf: unsupported ggml tensor type " + std::to_string(ggml_type));
  if (ne.empty() || ne.size() > static_cast<std::size_t>(kMaxDims))
    throw Error("gguf: a tensor has 1 to 4 dimensions, got " + std::to_string(ne.size()));
  if (ne[0] % tr->block_elements != 0)
    throw Error("gguf: ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the " + tr->name + " block (" +
                std::to_string(tr->block_elements) + ")");
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::uint64_t bytes = ne[0] / tr->block_elements;
  if (bytes != 0 && tr->block_bytes > kMax / bytes) throw Error("gguf: tensor size overflows");
  bytes *= tr->block_bytes;
  for (std::size_t i = 1; i < ne.size(); ++i) {
    if (ne[i] != 0 && bytes > kMax / ne[i]) throw Error("gguf: tensor size overflows");
    bytes *= ne[i];
  }
  return bytes;
}

}  // namespace popper::gguf
