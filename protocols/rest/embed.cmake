# cmake -DINPUT=openapi.json -DOUTPUT=openapi_document.cpp -P embed.cmake
# Writes a C++ file whose weft::rest::openapi_document() returns INPUT's
# bytes; the build reruns it whenever INPUT changes.
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from protocols/rest/openapi.json by protocols/rest/embed.cmake.\n"
  "#include \"protocols/rest/openapi.hpp\"\n\n"
  "namespace weft::rest {\n\n"
  "namespace {\n"
  "constexpr char kDocument[] = {${bytes}};\n"
  "}  // namespace\n\n"
  "std::string_view openapi_document() { return std::string_view(kDocument, sizeof kDocument); }\n\n"
  "}  // namespace weft::rest\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
