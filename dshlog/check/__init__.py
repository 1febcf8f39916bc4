"""Every rule of the format once: header, envelope, data, surface, lifecycle, ownership."""
