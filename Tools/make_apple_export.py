#!/usr/bin/env python3
"""Writes a synthetic Apple Health export.xml (or .zip) for benchmarking `healthd import`.

Usage: python3 Tools/make_apple_export.py OUT.xml RECORDS [--zip]
Shaped like a real export: the iOS 16 internal DTD, Me, heart rate with metadata, steps from an
iPhone and a Watch, sleep categories, blood-pressure correlations repeated at top level, workouts
with WorkoutActivity/WorkoutStatistics, activity summaries, a few control characters and invalid
records. Deterministic: the same arguments give the same bytes.
"""
import sys, zipfile, random
from datetime import datetime, timedelta, timezone

def main():
    out, count = sys.argv[1], int(sys.argv[2])
    make_zip = "--zip" in sys.argv
    xml_path = out if not make_zip else out + ".tmp.xml"
    rng = random.Random(42)
    tz = timezone(timedelta(hours=-4))
    t = datetime(2019, 1, 1, tzinfo=tz)
    fmt = lambda d: d.strftime("%Y-%m-%d %H:%M:%S %z")
    watch = ('&lt;&lt;HKDevice: 0x283a01f40&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, '
             'hardware:Watch6,1, software:10.1&gt;')
    with open(xml_path, "w", encoding="utf-8") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE HealthData [\n<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>\n'
                '<!ATTLIST HealthData\n  locale CDATA #REQUIRED\n>\n<!ELEMENT Workout ((MetadataEntry|WorkoutEvent|WorkoutRoute|WorkoutStatistics)*)>\n]>\n')
        f.write('<HealthData locale="en_US">\n <ExportDate value="2024-01-01 10:00:00 -0400"/>\n')
        f.write(' <Me HKCharacteristicTypeIdentifierDateOfBirth="1980-02-03" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale" '
                'HKCharacteristicTypeIdentifierBloodType="HKBloodTypeOPositive" HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeIII"/>\n')
        written = 0
        step = 0
        while written < count:
            step += 1
            t += timedelta(seconds=rng.randint(20, 90))
            kind = step % 20
            s, e = fmt(t), fmt(t + timedelta(seconds=60))
            if kind < 9:
                f.write(f' <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Jane\'s Apple Watch" sourceVersion="10.1" device="{watch}" '
                        f'unit="count/min" creationDate="{e}" startDate="{s}" endDate="{s}" value="{rng.randint(50, 160)}">\n'
                        f'  <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="{rng.randint(0, 2)}"/>\n </Record>\n')
            elif kind < 15:
                src = "Jane's iPhone" if kind % 2 else "Jane's Apple Watch"
                f.write(f' <Record type="HKQuantityTypeIdentifierStepCount" sourceName="{src}" sourceVersion="17.1" unit="count" '
                        f'creationDate="{e}" startDate="{s}" endDate="{e}" value="{rng.randint(1, 120)}"/>\n')
            elif kind < 17:
                v = rng.choice(["AsleepCore", "AsleepDeep", "AsleepREM", "Awake", "InBed"])
                f.write(f' <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Jane\'s Apple Watch" sourceVersion="10.1" '
                        f'creationDate="{e}" startDate="{s}" endDate="{e}" value="HKCategoryValueSleepAnalysis{v}">\n'
                        f'  <MetadataEntry key="HKTimeZone" value="America/New_York"/>\n </Record>\n')
            elif kind == 17:
                sys_v, dia_v = rng.randint(100, 140), rng.randint(60, 90)
                rec = lambda typ, v: (f'<Record type="HKQuantityTypeIdentifierBloodPressure{typ}" sourceName="Omron" unit="mmHg" '
                                      f'creationDate="{e}" startDate="{s}" endDate="{s}" value="{v}"/>')
                f.write(f' {rec("Systolic", sys_v)}\n {rec("Diastolic", dia_v)}\n')
                f.write(f' <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Omron" creationDate="{e}" startDate="{s}" endDate="{s}">\n'
                        f'  <MetadataEntry key="HKWasUserEntered" value="0"/>\n  {rec("Systolic", sys_v)}\n  {rec("Diastolic", dia_v)}\n </Correlation>\n')
                written += 2
            elif kind == 18:
                we = fmt(t + timedelta(minutes=30))
                f.write(f' <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="30" durationUnit="min" sourceName="Jane\'s Apple Watch" '
                        f'device="{watch}" creationDate="{we}" startDate="{s}" endDate="{we}">\n'
                        f'  <MetadataEntry key="HKIndoorWorkout" value="0"/>\n'
                        f'  <WorkoutEvent type="HKWorkoutEventTypeSegment" date="{s}" duration="10" durationUnit="min"/>\n'
                        f'  <WorkoutActivity uuid="6A0B" startDate="{s}" endDate="{we}" duration="30" durationUnit="min">\n'
                        f'   <WorkoutEvent type="HKWorkoutEventTypePause" date="{fmt(t + timedelta(minutes=5))}"/>\n'
                        f'   <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" startDate="{s}" endDate="{we}" sum="312.5" unit="kcal"/>\n'
                        f'   <WorkoutStatistics type="HKQuantityTypeIdentifierDistanceWalkingRunning" startDate="{s}" endDate="{we}" sum="5.1" unit="km"/>\n'
                        f'   <MetadataEntry key="HKActivityNote" value="x\x01y"/>\n'
                        f'  </WorkoutActivity>\n </Workout>\n')
                t += timedelta(minutes=31)
            else:
                if step % 200 == 19:
                    f.write(f' <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Broken" unit="count" startDate="{s}" endDate="{e}" value="-5"/>\n')
                else:
                    f.write(f' <ActivitySummary dateComponents="{t.strftime("%Y-%m-%d")}" activeEnergyBurned="450.5" activeEnergyBurnedGoal="500" '
                            f'activeEnergyBurnedUnit="kcal" appleMoveTime="0" appleMoveTimeGoal="0" appleExerciseTime="32" appleExerciseTimeGoal="30" '
                            f'appleStandHours="11" appleStandHoursGoal="12"/>\n')
            written += 1
        f.write('</HealthData>\n')
    if make_zip:
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as z:
            z.write(xml_path, "apple_health_export/export.xml")
            z.writestr("apple_health_export/export_cda.xml", "<ClinicalDocument/>")
        import os
        os.remove(xml_path)

main()
