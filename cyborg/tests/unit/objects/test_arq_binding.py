"""The one validator of ARQ bindings (cyborg.objects.arq_binding).

The API's PATCH and the conductor's bind both use it; the messages here are
those API clients see (gabbits/accelerator-requests.yaml asserts some).
"""

from cyborg import exception
from cyborg.objects import arq_binding
from cyborg.tests import base

ARQ = '7c1d3c2a-9f3e-4c1a-8d6b-3e2f1a0b9c8d'
RP = '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e'
INSTANCE = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
# A value of _values that leaves the field out.
_DROP = object()


def _values(**changes):
    values = {'hostname': 'compute-1', 'device_rp_uuid': RP,
              'instance_uuid': INSTANCE}
    values.update(changes)
    return {name: value for name, value in values.items()
            if value is not _DROP}


class TestChecked(base.TestCase):

    def test_a_binding_comes_back_with_uuids_in_lower_case(self):
        self.assertEqual(
            {'hostname': 'compute-1', 'device_rp_uuid': RP,
             'instance_uuid': INSTANCE},
            arq_binding.checked(ARQ, _values(device_rp_uuid=RP.upper(),
                                             instance_uuid=INSTANCE.upper())))

    def test_project_id_is_kept_when_given(self):
        self.assertEqual('p1', arq_binding.checked(
            ARQ, _values(project_id='p1'))['project_id'])

    def _refused(self, values, message):
        error = self.assertRaises(exception.InvalidParameterValue,
                                  arq_binding.checked, ARQ, values)
        self.assertEqual(400, error.code)
        self.assertEqual(message, error.message)

    def test_refused_values_are_named(self):
        self._refused(_values(device_rp_uuid=_DROP, instance_uuid=_DROP),
                      'The bind of ARQ %s lacks /device_rp_uuid, '
                      '/instance_uuid' % ARQ)
        self._refused(_values(hostname=''),
                      "hostname of ARQ %s must be a non-empty string of at "
                      "most 255 characters, not ''" % ARQ)
        self._refused(_values(hostname='h' * 256),
                      'hostname of ARQ %s must be a non-empty string of at '
                      'most 255 characters, not %r' % (ARQ, 'h' * 256))
        self._refused(_values(device_rp_uuid='rp-1'),
                      "device_rp_uuid of ARQ %s must be a UUID, not 'rp-1'"
                      % ARQ)
        self._refused(_values(instance_uuid=7),
                      'instance_uuid of ARQ %s must be a UUID, not 7' % ARQ)
        self._refused(_values(project_id=''),
                      "project_id of ARQ %s must be a non-empty string, "
                      "not ''" % ARQ)
        self._refused(_values(project_id=None),
                      'project_id of ARQ %s must be a non-empty string, '
                      'not None' % ARQ)
        self._refused(_values(state='Bound'),
                      'Unknown field state in the bind of ARQ %s' % ARQ)

    def test_arq_uuid(self):
        self.assertEqual(ARQ, arq_binding.arq_uuid(ARQ.upper()))
        for value in ('arq-1', 7, None):
            error = self.assertRaises(exception.InvalidParameterValue,
                                      arq_binding.arq_uuid, value)
            self.assertEqual('%r is not an ARQ uuid' % (value,),
                             error.message)


class TestCheckedAll(base.TestCase):
    """The RPC form of the conductor's bind."""

    def test_bindings_by_lower_case_uuid(self):
        self.assertEqual({ARQ: _values()},
                         arq_binding.checked_all({ARQ.upper(): _values()}))

    def test_a_project_id_of_none_means_none(self):
        self.assertEqual({ARQ: _values()}, arq_binding.checked_all(
            {ARQ: _values(project_id=None)}))

    def test_refused_bindings(self):
        for bindings, fragment in (
                ({}, 'bindings must map ARQ uuids'),
                ([ARQ], 'bindings must map ARQ uuids'),
                ({'arq-1': _values()}, "'arq-1' is not an ARQ uuid"),
                ({ARQ: _values(), ARQ.upper(): _values()},
                 'ARQ %s is given twice' % ARQ),
                ({ARQ: 'compute-1'}, 'The binding of ARQ %s must be an '
                                     'object' % ARQ),
                ({ARQ: _values(hostname=None)}, 'hostname of ARQ %s' % ARQ)):
            error = self.assertRaises(exception.InvalidParameterValue,
                                      arq_binding.checked_all, bindings)
            self.assertIn(fragment, error.message)
