// Type identifiers as people read them in the Health app ("Steps", "Heart Rate"), and the
// category each belongs to (its colour on the permission sheet and the apps page).

const NAMES = {
  stepCount: "Steps", distanceWalkingRunning: "Walking + Running Distance", distanceCycling: "Cycling Distance",
  distanceSwimming: "Swimming Distance", distanceWheelchair: "Wheelchair Distance",
  distanceDownhillSnowSports: "Downhill Snow Sports Distance", activeEnergyBurned: "Active Energy",
  basalEnergyBurned: "Resting Energy", appleExerciseTime: "Exercise Minutes", appleStandTime: "Stand Minutes",
  appleMoveTime: "Move Minutes", timeInDaylight: "Time in Daylight", flightsClimbed: "Flights Climbed",
  pushCount: "Pushes", swimmingStrokeCount: "Swimming Strokes", numberOfTimesFallen: "Number of Times Fallen",
  appleStandHour: "Stand Hours", workout: "Workouts", workoutRoute: "Workout Routes", vo2Max: "Cardio Fitness",
  heartRate: "Heart Rate", restingHeartRate: "Resting Heart Rate", walkingHeartRateAverage: "Walking Heart Rate Average",
  heartRateRecoveryOneMinute: "Cardio Recovery", heartRateVariabilitySDNN: "Heart Rate Variability",
  highHeartRateEvent: "High Heart Rate Notifications", lowHeartRateEvent: "Low Heart Rate Notifications",
  irregularHeartRhythmEvent: "Irregular Rhythm Notifications", lowCardioFitnessEvent: "Low Cardio Fitness Notifications",
  electrocardiogram: "Electrocardiograms (ECG)", oxygenSaturation: "Blood Oxygen", respiratoryRate: "Respiratory Rate",
  bodyTemperature: "Body Temperature", basalBodyTemperature: "Basal Body Temperature",
  appleSleepingWristTemperature: "Wrist Temperature", bloodPressure: "Blood Pressure",
  bloodPressureSystolic: "Blood Pressure Systolic", bloodPressureDiastolic: "Blood Pressure Diastolic",
  peripheralPerfusionIndex: "Peripheral Perfusion Index", forcedVitalCapacity: "Forced Vital Capacity",
  peakExpiratoryFlowRate: "Peak Expiratory Flow Rate", electrodermalActivity: "Electrodermal Activity",
  bodyMass: "Weight", height: "Height", bodyMassIndex: "Body Mass Index", bodyFatPercentage: "Body Fat Percentage",
  leanBodyMass: "Lean Body Mass", waistCircumference: "Waist Circumference",
  dietaryEnergyConsumed: "Dietary Energy", dietaryCarbohydrates: "Carbohydrates", dietaryFatTotal: "Total Fat",
  dietaryFatSaturated: "Saturated Fat", dietaryFatMonounsaturated: "Monounsaturated Fat",
  dietaryFatPolyunsaturated: "Polyunsaturated Fat", dietaryProtein: "Protein", dietarySugar: "Sugar",
  dietaryFiber: "Fiber", dietaryCholesterol: "Dietary Cholesterol", dietarySodium: "Sodium", dietaryPotassium: "Potassium",
  dietaryCalcium: "Calcium", dietaryIron: "Iron", dietaryVitaminC: "Vitamin C", dietaryCaffeine: "Caffeine",
  dietaryWater: "Water", food: "Food", bloodGlucose: "Blood Glucose", bloodAlcoholContent: "Blood Alcohol Content",
  numberOfAlcoholicBeverages: "Alcoholic Beverages", insulinDelivery: "Insulin Delivery",
  walkingSpeed: "Walking Speed", walkingStepLength: "Walking Step Length", walkingAsymmetryPercentage: "Walking Asymmetry",
  walkingDoubleSupportPercentage: "Double Support Time", appleWalkingSteadiness: "Walking Steadiness",
  sixMinuteWalkTestDistance: "Six-Minute Walk", stairAscentSpeed: "Stair Speed: Up", stairDescentSpeed: "Stair Speed: Down",
  runningSpeed: "Running Speed", runningPower: "Running Power", runningStrideLength: "Running Stride Length",
  runningVerticalOscillation: "Vertical Oscillation", runningGroundContactTime: "Ground Contact Time",
  cyclingSpeed: "Cycling Speed", cyclingPower: "Cycling Power", cyclingCadence: "Cycling Cadence",
  environmentalAudioExposure: "Environmental Sound Levels", headphoneAudioExposure: "Headphone Audio Levels",
  environmentalAudioExposureEvent: "Noise Notifications", headphoneAudioExposureEvent: "Headphone Notifications",
  uvExposure: "UV Index", inhalerUsage: "Inhaler Usage", sleepAnalysis: "Sleep", mindfulSession: "Mindful Minutes",
  stateOfMind: "State of Mind", menstrualFlow: "Menstruation", intermenstrualBleeding: "Spotting",
  ovulationTestResult: "Ovulation Test Result", cervicalMucusQuality: "Cervical Mucus Quality",
  sexualActivity: "Sexual Activity", toothbrushingEvent: "Toothbrushing", handwashingEvent: "Handwashing",
  rapidPoundingOrFlutteringHeartbeat: "Rapid, Pounding, or Fluttering Heartbeat",
  chestTightnessOrPain: "Chest Tightness or Pain", dateOfBirth: "Date of Birth", biologicalSex: "Sex",
  bloodType: "Blood Type", fitzpatrickSkinType: "Skin Type", wheelchairUse: "Wheelchair", activityMoveMode: "Move Mode",
};

const SMALL_WORDS = new Set(["of", "or", "and", "in", "to", "a", "the"]);

/** "Steps" for `stepCount`; a type this list does not know reads as its words ("Sore Throat"). */
export function typeName(type) {
  if (Object.hasOwn(NAMES, type)) return NAMES[type];
  const words = String(type).replace(/([a-z0-9])([A-Z])/g, "$1 $2").split(/\s+/).filter(Boolean);
  return words.map((word, index) => (index > 0 && SMALL_WORDS.has(word.toLowerCase()) ? word.toLowerCase()
    : word.charAt(0).toUpperCase() + word.slice(1))).join(" ");
}

const CATEGORIES = [
  ["heart", /^(heartRate|restingHeartRate|walkingHeartRateAverage|heartRateRecoveryOneMinute|heartRateVariabilitySDNN|highHeartRateEvent|lowHeartRateEvent|irregularHeartRhythmEvent|lowCardioFitnessEvent|electrocardiogram|vo2Max|bloodPressure)/],
  ["sleep", /^(sleepAnalysis|appleSleepingWristTemperature)$/],
  ["mind", /^(mindfulSession|stateOfMind)$/],
  ["nutrition", /^(dietary|food$)/],
  ["body", /^(bodyMass|height|bodyMassIndex|bodyFatPercentage|leanBodyMass|waistCircumference)$/],
  ["vitals", /^(oxygenSaturation|respiratoryRate|bodyTemperature|basalBodyTemperature|bloodGlucose|peripheralPerfusionIndex|forcedVitalCapacity|peakExpiratoryFlowRate|electrodermalActivity|bloodAlcoholContent|insulinDelivery|inhalerUsage)/],
  ["mobility", /^(walking(Speed|StepLength|Asymmetry|DoubleSupport)|appleWalkingSteadiness|sixMinuteWalkTestDistance|stair|running(Stride|Vertical|GroundContact))/],
  ["cycle", /^(menstrualFlow|intermenstrualBleeding|ovulationTestResult|cervicalMucusQuality|sexualActivity)$/],
  ["characteristic", /^(dateOfBirth|biologicalSex|bloodType|fitzpatrickSkinType|wheelchairUse|activityMoveMode)$/],
  ["activity", /^(stepCount|distance|activeEnergyBurned|basalEnergyBurned|apple(Exercise|Stand|Move)|timeInDaylight|flightsClimbed|pushCount|swimmingStrokeCount|numberOfTimesFallen|workout|running|cycling)/],
];

/** The type's category: activity, heart, sleep, mind, nutrition, body, vitals, mobility, cycle, characteristic or other. */
export function typeCategory(type) {
  for (const [name, pattern] of CATEGORIES) if (pattern.test(type)) return name;
  return "other";
}

/** Types in the Health app's order on the sheet: alphabetical by the name people read. */
export function sortedTypes(types) {
  return [...new Set(types)].sort((a, b) => typeName(a).localeCompare(typeName(b), "en"));
}
