//! kuryr.conf (oslo.config-style INI) loading and typed settings.
