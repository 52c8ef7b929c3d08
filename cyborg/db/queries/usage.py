"""Usage counts for the quota checks of ``cyborg.conductor.quota``.

Each is one query, whatever the number of rows it counts.
"""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models


@db_api.reader
def arqs_per_profile_group(context, project_id):
    """(profile groups JSON text, group index, number of ARQs) of a project.

    ``project_id`` None counts the ARQs that have no project.
    """
    arq = models.ARQ
    owner = (arq.project_id.is_(None) if project_id is None
             else arq.project_id == project_id)
    counts = sa.select(
        arq.device_profile_id, arq.device_profile_group_id,
        sa.func.count(arq.id).label('arqs')
    ).where(owner).group_by(
        arq.device_profile_id, arq.device_profile_group_id).subquery()
    profile = models.DeviceProfile
    query = sa.select(
        profile.profile_json, counts.c.device_profile_group_id,
        counts.c.arqs
    ).join(profile, profile.id == counts.c.device_profile_id)
    return context.session.execute(query).all()


@db_api.reader
def count_device_profiles(context):
    """The number of device profiles."""
    return context.session.execute(
        sa.select(sa.func.count(models.DeviceProfile.id))).scalar_one()
