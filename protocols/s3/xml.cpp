#include "protocols/s3/xml.hpp"

namespace weft::s3::xml {

namespace {
struct StringWriter : pugi::xml_writer {
  std::string out;
  void write(const void* data, std::size_t size) override {
    out.append(static_cast<const char*>(data), size);
  }
};
}  // namespace

pugi::xml_node start(pugi::xml_document& doc, const char* root, bool with_ns) {
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  auto node = doc.append_child(root);
  if (with_ns) node.append_attribute("xmlns") = kNamespace;
  return node;
}

pugi::xml_node add(pugi::xml_node parent, const char* name, std::string_view text) {
  auto node = parent.append_child(name);
  node.append_child(pugi::node_pcdata).set_value(std::string(text).c_str());
  return node;
}

std::string render(const pugi::xml_document& doc) {
  StringWriter w;
  doc.save(w, "", pugi::format_raw, pugi::encoding_utf8);
  return std::move(w.out);
}

bool parse(pugi::xml_document& doc, std::string_view text) {
  auto r = doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
  return static_cast<bool>(r) && doc.document_element();
}

std::string_view child_text(pugi::xml_node parent, const char* name) {
  return parent.child(name).text().get();
}

}  // namespace weft::s3::xml
