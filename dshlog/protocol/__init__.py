"""Facts of the format, no I/O: the JSON reader and writer, values, vocabulary, layout, dsh's texts, codecs."""
