// Package translate runs translate_text: {texts, target_language} →
// {translations: [{text, translated}], translated_count}, billing one unit
// per string translated. It needs the agent's document_translation_enabled
// (when off, the tool reports an error: 200 with error set), and a
// translation engine behind the Provider interface; the one provided speaks
// LibreTranslate's HTTP API. A deployment without one answers 501.
package translate
