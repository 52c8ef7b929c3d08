"""The read behind a prefetch: every FPGA region a bitstream might fit.

One statement, whatever the size of the fleet: each deployable of an FPGA
device with the device columns ``cyborg.bitstream_fit.DeviceInfo.from_rows``
reads (vendor, model, vendor_board_info), its host and its ``region_id``
attribute (null when it has none).
"""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models

REGION_ID = 'region_id'
# The only device type whose regions take a bitstream.
FPGA = 'FPGA'


@db_api.reader
def fpga_regions(context):
    """Read-only rows: ``hostname``, ``deployable_name``, ``vendor``,
    ``model``, ``vendor_board_info``, ``region_id``, by host and id."""
    device = models.Device
    deployable = models.Deployable
    attribute = models.Attribute
    query = sa.select(
        device.hostname, deployable.name.label('deployable_name'),
        device.vendor, device.model, device.vendor_board_info,
        attribute.value.label('region_id'),
    ).join(
        device, device.id == deployable.device_id,
    ).outerjoin(
        attribute, sa.and_(attribute.deployable_id == deployable.id,
                           attribute.key == REGION_ID,
                           attribute.parent_attribute_id.is_(None)),
    ).where(
        device.type == FPGA,
    ).order_by(device.hostname, deployable.id)
    return context.session.execute(query).all()
