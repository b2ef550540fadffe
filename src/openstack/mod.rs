//! OpenStack REST clients: Keystone v3, Octavia v2, Neutron v2.0.
