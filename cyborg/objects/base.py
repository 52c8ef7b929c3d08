"""Bases shared by cyborg's versioned objects and the RPC serializer."""

from oslo_versionedobjects import base as ovo_base


class CyborgObjectRegistry(ovo_base.VersionedObjectRegistry):
    """The registry of cyborg's objects; objects.Foo names the newest class."""

    def registration_hook(self, cls, index):
        from cyborg import objects
        setattr(objects, cls.obj_name(), cls)


class CyborgObject(ovo_base.VersionedObject):
    """Base of every cyborg object."""

    OBJ_SERIAL_NAMESPACE = 'cyborg_object'
    OBJ_PROJECT_NAMESPACE = 'cyborg'

    def as_dict(self):
        """The set fields as a plain dict."""
        return {name: getattr(self, name) for name in self.fields
                if self.obj_attr_is_set(name)}


class CyborgObjectSerializer(ovo_base.VersionedObjectSerializer):
    """Serializes cyborg objects for oslo.messaging."""

    OBJ_BASE_CLASS = CyborgObject
