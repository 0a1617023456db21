// XML of S3 requests and responses, through pugixml.
#pragma once

#include <pugixml.hpp>

#include <string>
#include <string_view>

namespace weft::s3::xml {

inline constexpr const char* kNamespace = "http://s3.amazonaws.com/doc/2006-03-01/";

// Adds the root element (in the S3 namespace when `with_ns`) to `doc`.
pugi::xml_node start(pugi::xml_document& doc, const char* root, bool with_ns = true);
// <name>text</name> under `parent`; returns the new element.
pugi::xml_node add(pugi::xml_node parent, const char* name, std::string_view text);
// The document with an XML declaration, without indentation.
std::string render(const pugi::xml_document& doc);
// Parses a request body; false when it is not well-formed XML.
bool parse(pugi::xml_document& doc, std::string_view text);
// The text of parent's first child element `name` (empty when absent).
std::string_view child_text(pugi::xml_node parent, const char* name);

}  // namespace weft::s3::xml
